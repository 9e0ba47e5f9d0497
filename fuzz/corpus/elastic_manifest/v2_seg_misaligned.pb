 *blk.{L}.2
w *0P:+
blk.{L}.down.weight--+
wB
split
w @