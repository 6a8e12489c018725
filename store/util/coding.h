// Encoding of integers into byte strings: little-endian fixed-width and
// varints for on-disk record fields, big-endian fixed-width where byte
// order must follow numeric order (keys).
//
// Thread safety: pure functions.
#ifndef TABLETFS_STORE_UTIL_CODING_H_
#define TABLETFS_STORE_UTIL_CODING_H_

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace tabletfs {

inline void EncodeFixed32(char *dst, uint32_t v) {
  for (int i = 0; i < 4; ++i) dst[i] = static_cast<char>(v >> (8 * i));
}
inline void EncodeFixed64(char *dst, uint64_t v) {
  for (int i = 0; i < 8; ++i) dst[i] = static_cast<char>(v >> (8 * i));
}
inline uint32_t DecodeFixed32(const char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= uint32_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}
inline uint64_t DecodeFixed64(const char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}
inline void PutFixed32(std::string *dst, uint32_t v) {
  char buf[4];
  EncodeFixed32(buf, v);
  dst->append(buf, 4);
}
inline void PutFixed64(std::string *dst, uint64_t v) {
  char buf[8];
  EncodeFixed64(buf, v);
  dst->append(buf, 8);
}

// Big-endian: memcmp order equals numeric order. One load and one byte
// swap (GCC turned the byte-by-byte loops into 4 and 8 loads and shifts;
// every key of every read decodes 3 of them).
inline uint32_t ToBigEndian(uint32_t v) {
  if constexpr (std::endian::native == std::endian::little) {
    return __builtin_bswap32(v);
  }
  return v;
}
inline uint64_t ToBigEndian(uint64_t v) {
  if constexpr (std::endian::native == std::endian::little) {
    return __builtin_bswap64(v);
  }
  return v;
}
inline void EncodeBigEndian32(char *dst, uint32_t v) {
  v = ToBigEndian(v);
  std::memcpy(dst, &v, 4);
}
inline void EncodeBigEndian64(char *dst, uint64_t v) {
  v = ToBigEndian(v);
  std::memcpy(dst, &v, 8);
}
inline uint32_t DecodeBigEndian32(const char *p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return ToBigEndian(v);
}
inline uint64_t DecodeBigEndian64(const char *p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return ToBigEndian(v);
}
inline void PutBigEndian32(std::string *dst, uint32_t v) {
  char buf[4];
  EncodeBigEndian32(buf, v);
  dst->append(buf, 4);
}
inline void PutBigEndian64(std::string *dst, uint64_t v) {
  char buf[8];
  EncodeBigEndian64(buf, v);
  dst->append(buf, 8);
}

// Varints: 7 bits per byte, low groups first, high bit = more follows.
inline void PutVarint64(std::string *dst, uint64_t v) {
  char buf[10];
  int n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  dst->append(buf, n);
}
inline void PutVarint32(std::string *dst, uint32_t v) { PutVarint64(dst, v); }

// Parses a varint from the front of *input and advances it. False when the
// input ends inside the varint or it is longer than the type allows.
inline bool GetVarint64(std::string_view *input, uint64_t *value) {
  uint64_t result = 0;
  for (size_t i = 0; i < input->size() && i < 10; ++i) {
    uint64_t byte = static_cast<uint8_t>((*input)[i]);
    if (i == 9 && byte > 1) return false;
    result |= (byte & 0x7f) << (7 * i);
    if (byte < 0x80) {
      input->remove_prefix(i + 1);
      *value = result;
      return true;
    }
  }
  return false;
}
inline bool GetVarint32(std::string_view *input, uint32_t *value) {
  uint64_t v;
  std::string_view saved = *input;
  if (!GetVarint64(input, &v) || v > UINT32_MAX) {
    *input = saved;
    return false;
  }
  *value = static_cast<uint32_t>(v);
  return true;
}
inline bool GetFixed32(std::string_view *input, uint32_t *value) {
  if (input->size() < 4) return false;
  *value = DecodeFixed32(input->data());
  input->remove_prefix(4);
  return true;
}
inline bool GetFixed64(std::string_view *input, uint64_t *value) {
  if (input->size() < 8) return false;
  *value = DecodeFixed64(input->data());
  input->remove_prefix(8);
  return true;
}

// A varint length followed by that many bytes.
inline void PutLengthPrefixed(std::string *dst, std::string_view s) {
  PutVarint64(dst, s.size());
  dst->append(s);
}
inline bool GetLengthPrefixed(std::string_view *input,
                              std::string_view *result) {
  uint64_t len;
  std::string_view saved = *input;
  if (!GetVarint64(input, &len) || len > input->size()) {
    *input = saved;
    return false;
  }
  *result = input->substr(0, len);
  input->remove_prefix(len);
  return true;
}

}  // namespace tabletfs

#endif  // TABLETFS_STORE_UTIL_CODING_H_
