// protobuf_writer.h: the protocol buffers wire format, written by hand for
// one message family (pprof's profile.proto, output/pprof.h). A generated
// encoder would need protoc and a copy of the schema in the build for a
// handful of varint and length-delimited fields; the wire format itself is
// small and fixed (protobuf.dev, "Encoding").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/varint.h"

namespace gpuprof {

class ProtobufWriter {
 public:
  // A varint field (int64, uint64, bool): wire type 0. Zero is the
  // default and is left out, as proto3 does.
  void varint(uint32_t field, uint64_t value) {
    if (value == 0) return;
    tag(field, 0);
    raw_varint(value);
  }
  void signed_varint(uint32_t field, int64_t value) { varint(field, static_cast<uint64_t>(value)); }

  // A length-delimited field (string, bytes, an embedded message): wire type 2.
  void bytes(uint32_t field, std::string_view data) {
    tag(field, 2);
    raw_varint(data.size());
    out_.append(data);
  }
  // A string field written even when empty (string_table[0] must be "").
  void string_always(uint32_t field, std::string_view text) { bytes(field, text); }

  // A packed repeated varint field (proto3's default for repeated scalars).
  template <typename T>
  void packed(uint32_t field, const std::vector<T>& values) {
    if (values.empty()) return;
    ProtobufWriter body;
    for (T v : values) body.raw_varint(static_cast<uint64_t>(v));
    bytes(field, body.out_);
  }

  // An embedded message.
  void message(uint32_t field, const ProtobufWriter& body) { bytes(field, body.out_); }

  const std::string& data() const { return out_; }

 private:
  void tag(uint32_t field, uint32_t wire_type) { raw_varint((static_cast<uint64_t>(field) << 3) | wire_type); }
  void raw_varint(uint64_t value) { append_varint(out_, value); }

  std::string out_;
};

}  // namespace gpuprof
