#include "store/table/format.h"

#include <lz4.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define TABLETFS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TABLETFS_ASAN 1
#endif
#endif
#ifdef TABLETFS_ASAN
#include <sanitizer/asan_interface.h>
#endif

#include "store/util/coding.h"
#include "store/util/hash.h"

namespace tabletfs {

namespace {

// lz4 expands its input at most ~255 times (a long match costs one byte per
// 255 bytes it produces); 256 leaves room for the fixed overheads.
constexpr uint64_t kLz4MaxExpansion = 256;

}  // namespace

std::string BlockContext(std::string_view file_name, uint64_t offset) {
  std::string s(file_name);
  s += ": block at offset ";
  s += std::to_string(offset);
  return s;
}

void BlockHandle::EncodeTo(std::string* dst) const {
  PutVarint64(dst, offset);
  PutVarint64(dst, size);
}

bool BlockHandle::DecodeFrom(std::string_view* input) {
  return GetVarint64(input, &offset) && GetVarint64(input, &size);
}

void IndexEntry::EncodeTo(std::string* dst) const {
  handle.EncodeTo(dst);
  if (group != handle.offset) PutVarint64(dst, handle.offset - group);
}

bool IndexEntry::DecodeFrom(std::string_view input) {
  if (!handle.DecodeFrom(&input)) return false;
  uint64_t back = 0;
  if (!input.empty() && (!GetVarint64(&input, &back) || back > handle.offset)) {
    return false;
  }
  group = handle.offset - back;
  return input.empty();
}

void Footer::EncodeTo(std::string* dst) const {
  size_t start = dst->size();
  PutFixed64(dst, index.offset);
  PutFixed64(dst, index.size);
  PutFixed64(dst, filter.offset);
  PutFixed64(dst, filter.size);
  PutFixed32(dst, format_version);
  PutFixed64(dst, Checksum64(std::string_view(*dst).substr(start, 36)));
  dst->append(kMagic);
}

Status Footer::DecodeFrom(std::string_view input, std::string_view file_name,
                          uint64_t offset) {
  std::string where(file_name);
  where += ": footer at offset " + std::to_string(offset);
  if (input.size() != kEncodedLength) {
    return Status::Corruption(where, "file too short to be an SSTable");
  }
  if (input.substr(44) != kMagic) {
    return Status::Corruption(where, "bad magic number (not an SSTable)");
  }
  if (DecodeFixed64(input.data() + 36) != Checksum64(input.substr(0, 36))) {
    return Status::Corruption(where, "checksum mismatch");
  }
  format_version = DecodeFixed32(input.data() + 32);
  if (format_version < kOldestVersion || format_version > kCurrentVersion) {
    return Status::NotSupported(
        where, "format version " + std::to_string(format_version) +
                   " (this build reads versions " +
                   std::to_string(kOldestVersion) + " to " +
                   std::to_string(kCurrentVersion) + ")");
  }
  index.offset = DecodeFixed64(input.data());
  index.size = DecodeFixed64(input.data() + 8);
  filter.offset = DecodeFixed64(input.data() + 16);
  filter.size = DecodeFixed64(input.data() + 24);
  return Status::OK();
}

uint64_t BlockChecksum(uint32_t format_version, std::string_view data) {
  return format_version == 1 ? Checksum64(data) : Checksum3(data);
}

BlockType EncodeBlock(std::string_view contents, Compression compression,
                      uint32_t format_version, std::string* out) {
  BlockType type = BlockType::kRaw;
  size_t start = out->size();
  if (compression == Compression::kLz4 && !contents.empty() &&
      contents.size() <= static_cast<size_t>(LZ4_MAX_INPUT_SIZE)) {
    PutVarint64(out, contents.size());
    size_t header = out->size() - start;
    int bound = LZ4_compressBound(static_cast<int>(contents.size()));
    out->resize(start + header + bound);
    int n = LZ4_compress_default(contents.data(), out->data() + start + header,
                                 static_cast<int>(contents.size()), bound);
    // lz4 must pay for the decompression it costs every read.
    if (n > 0 && header + n <= contents.size() - contents.size() / 8) {
      out->resize(start + header + n);
      type = BlockType::kLz4;
    } else {
      out->resize(start);
    }
  }
  if (type == BlockType::kRaw) out->append(contents);
  // The checksum covers the stored bytes and the type byte, so a flipped
  // type is caught as surely as a flipped payload byte.
  out->push_back(static_cast<char>(type));
  PutFixed64(
      out, BlockChecksum(format_version, std::string_view(*out).substr(start)));
  return type;
}

namespace {

constexpr size_t kClassBytes = 256;
constexpr uint32_t kClasses = 64;  // buffers up to 16 KiB are cached
constexpr size_t kThreadCacheBytes = 256 << 10;

// The calling thread's freed buffers, by size class.
struct ThreadBuffers {
  std::vector<char*> free[kClasses + 1];
  size_t bytes = 0;
  ~ThreadBuffers();
};

// Set once the thread's cache is destroyed (at thread exit, before other
// thread-local objects that may still free blocks, such as a point read's
// scratch): from then on buffers are freed, not cached. A bool has no
// destructor, so it can be read after the cache is gone.
thread_local bool t_buffers_gone = false;

ThreadBuffers& Buffers() {
  thread_local ThreadBuffers buffers;
  return buffers;
}

ThreadBuffers::~ThreadBuffers() {
  t_buffers_gone = true;
  for (uint32_t c = 1; c <= kClasses; ++c) {
    for (char* p : free[c]) {
#ifdef TABLETFS_ASAN
      ASAN_UNPOISON_MEMORY_REGION(p, c * kClassBytes);
#endif
      delete[] p;
    }
  }
}

}  // namespace

BlockBuffer::BlockBuffer(size_t bytes) {
  const size_t cls = (bytes + kClassBytes - 1) / kClassBytes;
  if (cls == 0 || cls > kClasses || t_buffers_gone) {
    data_ = new char[bytes];
    capacity_ = bytes;
    return;
  }
  cached_ = true;
  capacity_ = cls * kClassBytes;
  ThreadBuffers& cache = Buffers();
  std::vector<char*>& list = cache.free[cls];
  if (list.empty()) {
    data_ = new char[capacity_];
  } else {
    data_ = list.back();
    list.pop_back();
    cache.bytes -= capacity_;
  }
#ifdef TABLETFS_ASAN
  // Only the bytes asked for are addressable, as from new[]: a read past
  // them is caught, not served from the class's slack.
  ASAN_UNPOISON_MEMORY_REGION(data_, bytes);
  ASAN_POISON_MEMORY_REGION(data_ + bytes, capacity_ - bytes);
#endif
}

size_t BlockBuffer::ThreadCachedBytes() {
  return t_buffers_gone ? 0 : Buffers().bytes;
}

BlockBuffer& BlockBuffer::operator=(BlockBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = other.data_;
    capacity_ = other.capacity_;
    cached_ = other.cached_;
    other.data_ = nullptr;
    other.capacity_ = 0;
  }
  return *this;
}

void BlockBuffer::Release() {
  if (data_ == nullptr) return;
  const size_t bytes = capacity_;
  if (cached_ && !t_buffers_gone) {
    ThreadBuffers& cache = Buffers();
    if (cache.bytes + bytes <= kThreadCacheBytes) {
      cache.free[bytes / kClassBytes].push_back(data_);
#ifdef TABLETFS_ASAN
      ASAN_POISON_MEMORY_REGION(data_, bytes);
#endif
      cache.bytes += bytes;
      data_ = nullptr;
      capacity_ = 0;
      return;
    }
  }
#ifdef TABLETFS_ASAN
  ASAN_UNPOISON_MEMORY_REGION(data_, bytes);  // its slack, if cached_
#endif
  delete[] data_;
  data_ = nullptr;
  capacity_ = 0;
}

Result<BlockContents> ReadBlockContents(const RandomAccessFile& file,
                                        std::string_view file_name,
                                        const BlockHandle& handle,
                                        uint32_t format_version) {
  if (handle.size > (uint64_t{1} << 32)) {
    return Status::Corruption(
        BlockContext(file_name, handle.offset),
        "implausible block size " + std::to_string(handle.size));
  }
  size_t n = handle.size + kBlockTrailerSize;
  // A mapped file needs no read buffer: a compressed block is decompressed
  // from the mapping and a raw one copied out of it, one allocation each.
  BlockContents buf;
  if (!file.ReadsInPlace()) {
    buf = {BlockBuffer(n), handle.size};
  }
  std::string_view data;
  Status s = file.Read(handle.offset, n, &data, buf.data.get());
  if (!s.ok()) return s.WithContext(BlockContext(file_name, handle.offset));
  if (data.data() != buf.data.get() && !data.empty()) {
    // In place (mapped): the block is mostly not in the CPU's caches. Ask
    // for its lines at once (a block's worth: the CPU keeps only so many
    // misses in flight, and past them the checksum's reads stream), so
    // their misses overlap; the trailer's, read first, would otherwise
    // wait alone, then the checksum's.
    const size_t ahead = std::min<size_t>(data.size(), 8 << 10);
    for (size_t line = 0; line < ahead; line += 64) {
      __builtin_prefetch(data.data() + line);  // never faults
    }
    __builtin_prefetch(data.data() + data.size() - 1);
  }
  if (data.size() != n) {
    return Status::Corruption(BlockContext(file_name, handle.offset),
                              "truncated block: read " +
                                  std::to_string(data.size()) + " of " +
                                  std::to_string(n) + " bytes");
  }
  std::string_view stored = data.substr(0, handle.size);
  char type = data[handle.size];
  uint64_t expected = DecodeFixed64(data.data() + handle.size + 1);
  if (BlockChecksum(format_version, data.substr(0, handle.size + 1)) !=
      expected) {
    return Status::Corruption(BlockContext(file_name, handle.offset),
                              "checksum mismatch");
  }
  switch (static_cast<BlockType>(type)) {
    case BlockType::kRaw:
      if (data.data() != buf.data.get()) {  // in place: copy it out
        if (buf.data.get() == nullptr) buf.data = BlockBuffer(stored.size());
        std::memcpy(buf.data.get(), stored.data(), stored.size());
      }
      buf.size = stored.size();
      return buf;
    case BlockType::kLz4: {
      uint64_t raw_size;
      std::string_view input = stored;
      if (!GetVarint64(&input, &raw_size) ||
          raw_size > static_cast<uint64_t>(LZ4_MAX_INPUT_SIZE) ||
          input.size() > static_cast<uint64_t>(LZ4_MAX_INPUT_SIZE)) {
        return Status::Corruption(BlockContext(file_name, handle.offset),
                                  "bad lz4 length header");
      }
      // The size is allocated before lz4 can check anything: bound it by the
      // most lz4 can expand its input (each extra byte of match length
      // encodes at most 255 bytes), so a damaged size cannot ask for 2 GiB
      // from a block of a few bytes. This also keeps both sizes within int.
      if (raw_size > kLz4MaxExpansion * input.size() + kLz4MaxExpansion) {
        return Status::Corruption(
            BlockContext(file_name, handle.offset),
            "lz4 uncompressed size " + std::to_string(raw_size) +
                " is implausible for " + std::to_string(input.size()) +
                " compressed bytes");
      }
      BlockContents raw{BlockBuffer(raw_size), raw_size};
      int got = LZ4_decompress_safe(input.data(), raw.data.get(),
                                    static_cast<int>(input.size()),
                                    static_cast<int>(raw_size));
      if (got < 0 || static_cast<uint64_t>(got) != raw_size) {
        return Status::Corruption(BlockContext(file_name, handle.offset),
                                  "lz4 decompression failed");
      }
      return raw;
    }
  }
  return Status::Corruption(
      BlockContext(file_name, handle.offset),
      "unknown block type " +
          std::to_string(static_cast<unsigned>(static_cast<uint8_t>(type))));
}

Result<std::string> ReadBlock(const RandomAccessFile& file,
                              std::string_view file_name,
                              const BlockHandle& handle,
                              uint32_t format_version) {
  TABLETFS_ASSIGN_OR_RETURN(
      BlockContents contents,
      ReadBlockContents(file, file_name, handle, format_version));
  return std::string(contents.view());
}

}  // namespace tabletfs
