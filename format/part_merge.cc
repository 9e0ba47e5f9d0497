#include "format/part_merge.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>

#include "boltpack/reader.h"
#include "boltpack_proto/boltpack.pb.h"
#include "common/atomic_file.h"
#include "common/limits.h"
#include "common/mapped_file.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "format/layout.h"
#include "format/manifest_convert.h"
#include "format/manifest_validate.h"
#include "format/output_rules.h"
#include "format/part_shard.h"

namespace boltpack::format {
namespace {

// One part, opened, with what its keys say.
struct Part {
  std::string path;
  std::string name;  // bare file name, as shard 0 names it
  std::unique_ptr<Reader> reader;
  Header header;
  Footer footer;
  uint64_t size = 0;
  uint64_t index = 0, count = 0, plan = 0, tensors = 0;
  std::vector<uint64_t> order;  // places of its tensors in the model
  std::string elastic;          // a serialized ElasticManifest, or empty
  Metadata shared;              // its metadata less the part keys
};

absl::Status NotAPart(const std::string& path, std::string_view why) {
  return absl::InvalidArgumentError(StrCat(path, ": not a part of `bolt-pack convert --part` (", why, ")"));
}

absl::StatusOr<uint64_t> UintKey(const Part& p, const Metadata& md, std::string_view key) {
  for (const auto& [k, v] : md) {
    if (k == key && (v.type == ValueType::kUint32 || v.type == ValueType::kUint64)) return v.u;
  }
  return NotAPart(p.path, StrCat("no ", key, " key of an unsigned integer"));
}

std::string Folder(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash + 1);
}

bool SameFolder(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  return stat(Folder(a).c_str(), &sa) == 0 && stat(Folder(b).c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// Reads the part keys and the fixed header and footer of one part.
absl::Status ReadPartKeys(Part& p) {
  const Metadata& md = p.reader->metadata();
  BP_ASSIGN_OR_RETURN(p.index, UintKey(p, md, kPartIndexKey));
  BP_ASSIGN_OR_RETURN(p.count, UintKey(p, md, kPartCountKey));
  BP_ASSIGN_OR_RETURN(p.plan, UintKey(p, md, kPartPlanKey));
  BP_ASSIGN_OR_RETURN(p.tensors, UintKey(p, md, kPartTensorsKey));
  bool have_order = false;
  for (const auto& [k, v] : md) {
    if (k.rfind(kPartPrefix, 0) != 0) {
      p.shared.emplace_back(k, v);
    } else if (k == kPartOrderKey && v.type == ValueType::kArray && v.element_type == ValueType::kUint64) {
      have_order = true;
      for (size_t e = 0; e < v.array_size(); ++e) p.order.push_back(v.uint_element(e));
    } else if (k == kPartElasticKey && v.type == ValueType::kArray && v.element_type == ValueType::kUint8) {
      p.elastic = std::string(v.packed_bytes());
    }
  }
  if (!have_order) return NotAPart(p.path, StrCat("no ", kPartOrderKey, " array of UINT64"));
  if (p.order.size() != p.reader->tensors().size()) {
    return NotAPart(p.path, StrCat(kPartOrderKey, " has ", p.order.size(), " places for ", p.reader->tensors().size(),
                                   " tensors"));
  }
  for (size_t k = 0; k < p.order.size(); ++k) {
    if (p.order[k] >= p.tensors || (k > 0 && p.order[k] <= p.order[k - 1])) {
      return NotAPart(p.path, StrCat(kPartOrderKey, " is not increasing below ", p.tensors));
    }
  }
  // A part that is itself a multi-file model, has views or an elastic
  // manifest of its own is not what convert --part writes.
  if (p.reader->ShardPath(1).ok()) return NotAPart(p.path, "it is a multi-file model");
  if (p.reader->views().size() > 1) return absl::UnimplementedError(StrCat(p.path, ": merging parts with views is not implemented"));
  if (p.reader->elastic() != nullptr) return NotAPart(p.path, "it holds an elastic manifest itself");
  BP_ASSIGN_OR_RETURN(auto file, io::MappedFile::Open(p.path));
  p.size = file->size();
  BP_ASSIGN_OR_RETURN(p.header, ParseHeader(file->bytes(), p.path));
  BP_ASSIGN_OR_RETURN(p.footer, ParseFooter(file->bytes().subspan(file->size() - kFooterSize), p.path));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Part>> OpenParts(const std::vector<std::string>& paths, const std::string& output) {
  std::vector<Part> parts;
  for (const auto& path : paths) {
    Part p;
    p.path = path;
    p.name = path.substr(path.find_last_of('/') + 1);
    if (!SameFolder(path, output)) {
      return absl::InvalidArgumentError(StrCat(path, ": a part must lie in the folder of the output ", output,
                                               " (the merged model names its parts by bare file name)"));
    }
    BP_ASSIGN_OR_RETURN(p.reader, Reader::Open(path));
    BP_RETURN_IF_ERROR(ReadPartKeys(p));
    parts.push_back(std::move(p));
  }
  std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.index < b.index; });
  return parts;
}

// The parts are the `count` parts of one convert, each once.
absl::Status CheckOneConvert(const std::vector<Part>& parts) {
  if (parts.empty()) return absl::InvalidArgumentError("merge: no parts given");
  const Part& first = parts[0];
  if (first.count != parts.size()) {
    return absl::InvalidArgumentError(StrCat(first.path, ": is part ", first.index, " of ", first.count, ", but ",
                                             parts.size(), " parts were given"));
  }
  uint64_t placed = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    const Part& p = parts[k];
    if (p.index != k + 1) {
      return absl::InvalidArgumentError(StrCat(p.path, ": part ", p.index, " is given twice or part ", k + 1,
                                               " is missing"));
    }
    auto differs = [&](std::string_view what) {
      return absl::InvalidArgumentError(StrCat(p.path, ": not a part of the convert ", first.path, " belongs to (",
                                               what, " differs)"));
    };
    if (p.count != first.count) return differs("the part count");
    if (p.plan != first.plan || p.tensors != first.tensors) return differs("the plan");
    if (p.header.alignment != first.header.alignment) return differs("the alignment");
    if (p.elastic != first.elastic) return differs("the elastic manifest");
    if (p.shared != first.shared) return differs("the metadata");
    placed += p.order.size();
  }
  if (placed != first.tensors) {
    return absl::InvalidArgumentError(StrCat(first.path, ": the parts hold ", placed, " tensors, not the plan's ",
                                             first.tensors));
  }
  return absl::OkStatus();
}

// Shard 0's manifest: every tensor in the model's order, each stream in its part.
absl::StatusOr<v1::Manifest> MergedManifest(const std::vector<Part>& parts) {
  v1::Manifest m;
  m.set_format_major(kFormatMajor);
  m.set_format_minor(3);  // part shards
  m.set_alignment(parts[0].header.alignment);
  m.set_writer(parts[0].reader->writer());
  m.add_required_features("shards");
  m.add_required_features("part_shards");
  for (const auto& [key, value] : parts[0].shared) {
    auto* e = m.add_metadata();
    e->set_key(key);
    ToProto(value, e->mutable_value());
  }
  m.add_shards();  // shard 0: this file
  std::vector<std::pair<size_t, size_t>> at(parts[0].tensors, {SIZE_MAX, 0});
  for (size_t k = 0; k < parts.size(); ++k) {
    const Part& p = parts[k];
    for (const auto& f : p.reader->required_features()) {
      if (std::find(m.required_features().begin(), m.required_features().end(), f) == m.required_features().end()) {
        m.add_required_features(f);
      }
    }
    auto* s = m.add_shards();
    s->set_file_name(p.name);
    s->set_size(p.size);
    s->set_file_id(p.header.file_id);
    s->set_data_end(p.footer.manifest_offset);
    for (size_t j = 0; j < p.order.size(); ++j) {
      if (at[p.order[j]].first != SIZE_MAX) {
        return absl::InvalidArgumentError(StrCat(p.path, ": tensor place ", p.order[j], " is taken by another part"));
      }
      at[p.order[j]] = {k, j};
    }
  }
  for (const auto& [k, j] : at) {
    TensorInfo info = *parts[k].reader->SharedTensor(j);
    for (auto& st : info.streams) st.shard = static_cast<uint32_t>(k + 1);
    ToProto(info, m.add_tensors());
  }
  if (!parts[0].elastic.empty()) {
    if (!m.mutable_elastic()->ParseFromString(parts[0].elastic)) {
      return absl::DataLossError(StrCat(parts[0].path, ": ", kPartElasticKey, " is not an ElasticManifest"));
    }
    m.add_optional_features("elastic");
    // A version-3 elastic manifest (flat bindings) is format 1.4.
    if (m.elastic().version() >= 3) m.set_format_minor(4);
  }
  return m;
}

uint64_t NewFileId() {
  std::random_device rd;
  uint64_t id = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return id ^ static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

}  // namespace

absl::Status MergeParts(const std::vector<std::string>& paths, const std::string& output,
                        const MergeOptions& options) {
  BP_ASSIGN_OR_RETURN(std::vector<Part> parts, OpenParts(paths, output));
  BP_RETURN_IF_ERROR(CheckOneConvert(parts));
  Header header;
  header.format_minor = 3;
  header.alignment = parts[0].header.alignment;
  header.file_id = NewFileId();
  for (const Part& p : parts) {
    if (p.header.file_id == header.file_id) header.file_id ^= 1;  // [C-8.2.5]; astronomically rare
  }
  BP_ASSIGN_OR_RETURN(v1::Manifest m, MergedManifest(parts));
  header.format_minor = m.format_minor();
  BP_RETURN_IF_ERROR(ValidateShards(m, output, header.file_id));
  std::string bytes;
  if (!m.SerializeToString(&bytes)) return absl::InternalError(StrCat(output, ": the manifest does not serialize"));
  if (bytes.size() > kMaxManifestBytes) {
    return absl::ResourceExhaustedError(StrCat(output, ": manifest of ", bytes.size(), " bytes exceeds the 256 MiB limit"));
  }
  // The reader's checks of what is about to be written, every part's data
  // section where it ends: no merge commits a model its reader refuses.
  std::vector<uint64_t> data_ends = {kHeaderSize};
  for (const Part& p : parts) data_ends.push_back(p.footer.manifest_offset);
  BP_RETURN_IF_ERROR(ValidateAsReader(bytes, output, data_ends));
  BP_ASSIGN_OR_RETURN(auto file, io::AtomicFile::Create(output, paths, options.durable));
  BP_RETURN_IF_ERROR(file->Write(EncodeHeader(header)));
  const auto span = absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  BP_RETURN_IF_ERROR(file->Write(span));
  Footer footer;
  footer.manifest_offset = kHeaderSize;
  footer.manifest_length = bytes.size();
  footer.manifest_xxh3 = Xxh3(span);
  footer.format_minor = m.format_minor();
  footer.file_id = header.file_id;
  footer.file_size = kHeaderSize + bytes.size() + kFooterSize;
  BP_RETURN_IF_ERROR(file->Write(EncodeFooter(footer)));
  return file->Commit();
}

}  // namespace boltpack::format
