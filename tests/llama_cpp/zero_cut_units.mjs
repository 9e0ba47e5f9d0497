// Writes a copy of an F16/F32 GGUF in which the units an elastic budget cuts
// contribute nothing: for every binding of the authoring JSON whose innermost
// dimension follows an axis (the projection that reads the axis' units, e.g.
// ffn_down's channels, attn_output's head values), the columns of the units
// the budget does not keep are set to zero. The model that results computes
// what the budget's slice computes, up to summation order, so llama.cpp's
// greedy tokens on it and on `bolt-pack slice --budget` of the same recipe
// must agree: a check that the slice kept the right units (importance order,
// GQA groups) and wrote metadata llama.cpp reads the way we mean it.
//
//   node zero_cut_units.mjs IN.gguf ELASTIC.json BUDGET OUT.gguf
//
// Only what the shipped TinyStories recipe uses is supported (per-layer axes,
// optional groups, plain string dims); anything else is an error.
import fs from "node:fs";

const [inPath, recipePath, budgetName, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error("usage: node zero_cut_units.mjs IN.gguf ELASTIC.json BUDGET OUT.gguf");
  process.exit(2);
}
const die = (msg) => {
  console.error(`zero_cut_units: ${msg}`);
  process.exit(1);
};

const buf = Buffer.from(fs.readFileSync(inPath));
let pos = 0;
const u32 = () => { const v = buf.readUInt32LE(pos); pos += 4; return v; };
const u64 = () => { const v = buf.readBigUInt64LE(pos); pos += 8; return Number(v); };
const str = () => { const n = u64(); const s = buf.toString("utf8", pos, pos + n); pos += n; return s; };
const SIZES = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
function value(type) {
  if (type === 8) return str();
  if (type === 9) {
    const et = u32(), n = u64();
    const out = [];
    for (let i = 0; i < n; i++) out.push(value(et));
    return out;
  }
  if (!(type in SIZES)) die(`${inPath}: unknown GGUF value type ${type}`);
  const v = type === 4 ? buf.readUInt32LE(pos) : type === 10 ? Number(buf.readBigUInt64LE(pos)) : null;
  pos += SIZES[type];
  return v;
}

if (buf.toString("latin1", 0, 4) !== "GGUF") die(`${inPath}: not a GGUF file`);
pos = 4;
const version = u32();
if (version < 2) die(`${inPath}: GGUF version ${version} not supported`);
const nTensors = u64(), nKv = u64();
let alignment = 32;
for (let i = 0; i < nKv; i++) {
  const key = str();
  const v = value(u32());
  if (key === "general.alignment") alignment = v;
}
const tensors = new Map();
for (let i = 0; i < nTensors; i++) {
  const name = str();
  const nDims = u32();
  const ne = [];
  for (let d = 0; d < nDims; d++) ne.push(u64());
  const type = u32();
  const offset = u64();
  tensors.set(name, { ne, type, offset });
}
const dataStart = Math.ceil(pos / alignment) * alignment;

const recipe = JSON.parse(fs.readFileSync(recipePath, "utf8"));
const budget = recipe.budgets.find((b) => b.name === budgetName);
if (!budget) die(`${recipePath}: no budget "${budgetName}"`);
const pattern = recipe.layers.name_pattern;

// Kept units of `axis` in `layer`: the first count/groups of every group,
// groups ranked by descending score (ties: lower index first), as the writer
// stores them (spec/elastic.md §4).
function keptUnits(axisName, layer) {
  const axis = recipe.axes[axisName];
  const scores = recipe.importance?.[axisName]?.[String(layer)];
  if (!scores) die(`${recipePath}: no importance for axis "${axisName}" layer ${layer}`);
  const groups = axis.groups ?? 1;
  const count = budget.per_layer?.[axisName]?.[layer] ?? scores.length;
  const size = scores.length / groups;
  const kept = new Set();
  for (let g = 0; g < groups; g++) {
    const idx = [];
    for (let i = 0; i < size; i++) idx.push(g * size + i);
    idx.sort((a, b) => scores[b] - scores[a] || a - b);
    idx.slice(0, count / groups).forEach((u) => kept.add(u));
  }
  return kept;
}

let zeroed = 0;
for (let layer = 0; layer < recipe.layers.count; layer++) {
  for (const binding of recipe.bindings) {
    const dims = binding.dims;
    const axisName = dims[dims.length - 1];
    if (typeof axisName !== "string" || axisName === "-") continue;
    if (dims.slice(0, -1).some((d) => d !== "-")) die(`binding ${binding.tensor}: only the innermost dim may be bound`);
    const name = binding.tensor.replace("{L}", String(layer));
    if (!name.startsWith(pattern.replace("{L}", String(layer)))) die(`binding ${binding.tensor}: unexpected name`);
    const t = tensors.get(name);
    if (!t) die(`${inPath}: no tensor ${name}`);
    const elem = t.type === 0 ? 4 : t.type === 1 ? 2 : die(`${name}: only F32/F16 are supported`);
    const unit = recipe.axes[axisName].unit_elems ?? 1;
    const cols = t.ne[0];
    const rows = t.ne.slice(1).reduce((a, b) => a * b, 1);
    const kept = keptUnits(axisName, layer);
    const base = dataStart + t.offset;
    for (let u = 0; u * unit < cols; u++) {
      if (kept.has(u)) continue;
      for (let r = 0; r < rows; r++) {
        const at = base + (r * cols + u * unit) * elem;
        buf.fill(0, at, at + unit * elem);
      }
      zeroed++;
    }
  }
}
fs.writeFileSync(outPath, buf);
console.log(`zero_cut_units: ${budgetName}: ${zeroed} cut units zeroed -> ${outPath}`);
