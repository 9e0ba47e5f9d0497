# Sourced by scripts/fuzz.sh and scripts/fuzz_campaign.sh (after they set
# ROOT): reading fuzz/campaign.conf, one line per target:
#   TARGET MAX_LEN RATE FLAGS
CONF="$ROOT/fuzz/campaign.conf"

conf_field() {  # conf_field TARGET COLUMN(2: max_len, 3: rate, 4: flags) DEFAULT
  local v
  v=$(awk -v t="$1" -v c="$2" '$1 == t { print $c }' "$CONF" 2>/dev/null)
  echo "${v:-$3}"
}

# split_flags FLAGS: a conf flags field (comma-separated; "-" for none) into
# LF_FLAGS (libFuzzer flags) and ASAN_EXTRA (its asan:K=V entries, each
# ":K=V" for ASAN_OPTIONS).
split_flags() {
  local f parts
  LF_FLAGS="" ASAN_EXTRA=""
  IFS=, read -ra parts <<<"$1"
  for f in "${parts[@]}"; do
    case "$f" in
      -) ;;
      asan:*) ASAN_EXTRA+=":${f#asan:}" ;;
      *) LF_FLAGS+=" $f" ;;
    esac
  done
}
