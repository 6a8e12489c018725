#include "store/wal/value_file.h"

#include <cstring>
#include <utility>

#include "store/util/coding.h"
#include "store/util/hash.h"

namespace tabletfs {
namespace {

constexpr char kMagic[8] = {'T', 'F', 'S', 'V', 'A', 'L', 'U', 'E'};
constexpr uint32_t kFormatVersion = 1;
constexpr uint8_t kValueRefVersion = 1;
// No value this large is ever written (Options::max_value_bytes is at most
// 64 MiB by default); a larger length or ref size is damage, and refusing it
// avoids a huge allocation.
constexpr uint64_t kMaxEntryBytes = uint64_t{1} << 32;
// Far beyond any value file, far below what off_t can hold.
constexpr uint64_t kMaxFileOffset = uint64_t{1} << 56;

std::string Where(const std::string& path, uint64_t offset) {
  return "file " + path + " offset " + std::to_string(offset) + ": ";
}

std::string Hex(uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s = "0x";
  for (int shift = 60; shift >= 0; shift -= 4) s += kDigits[(v >> shift) & 0xf];
  return s;
}

std::string ParentDir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Reads exactly n bytes at offset into dst (resized to n). A short read is
// Corruption: the file was cut short.
Status ReadExact(const RandomAccessFile& file, const std::string& path,
                 uint64_t offset, size_t n, const char* what,
                 std::string* dst) {
  dst->resize(n);
  std::string_view got;
  Status s = file.Read(offset, n, &got, dst->data());
  if (!s.ok()) return s.WithContext(Where(path, offset) + "reading " + what);
  if (got.size() != n) {
    return Status::Corruption(Where(path, offset) + "truncated: expected " +
                              std::to_string(n) + " bytes of " + what +
                              ", the file holds " + std::to_string(got.size()));
  }
  if (got.data() != dst->data()) memcpy(dst->data(), got.data(), n);
  return Status::OK();
}

void EncodeFileHeader(uint64_t file_number, uint32_t flags, char* dst) {
  memcpy(dst, kMagic, 8);
  EncodeFixed32(dst + 8, kFormatVersion);
  EncodeFixed32(dst + 12, flags);
  EncodeFixed64(dst + 16, file_number);
  EncodeFixed64(dst + 24, Checksum64(std::string_view(dst, 24)));
}

struct FileHeader {
  uint64_t file_number;
  uint32_t flags;
};

Result<FileHeader> DecodeFileHeader(const std::string& path,
                                    std::string_view h) {
  if (memcmp(h.data(), kMagic, 8) != 0) {
    return Status::Corruption(Where(path, 0) +
                              "bad magic: not a tabletfs value file");
  }
  uint64_t stored = DecodeFixed64(h.data() + 24);
  uint64_t actual = Checksum64(h.substr(0, 24));
  if (stored != actual) {
    return Status::Corruption(Where(path, 0) +
                              "file header checksum mismatch (stored " +
                              Hex(stored) + ", computed " + Hex(actual) + ")");
  }
  uint32_t version = DecodeFixed32(h.data() + 8);
  uint32_t flags = DecodeFixed32(h.data() + 12);
  if (version != kFormatVersion || (flags & ~kValueFileMayEndTorn) != 0) {
    return Status::NotSupported(Where(path, 8) + "value file version " +
                                std::to_string(version) + " flags " +
                                std::to_string(flags) +
                                " (this build reads version 1, flags 0 or 1)");
  }
  return FileHeader{DecodeFixed64(h.data() + 16), flags};
}

struct EntryHeader {
  uint64_t length;
  uint64_t checksum;
};

// Decodes and checks the entry header at `offset`.
Result<EntryHeader> DecodeEntryHeader(const std::string& path, uint64_t offset,
                                      std::string_view h) {
  uint64_t stored = DecodeFixed64(h.data() + 16);
  uint64_t actual = Checksum64(h.substr(0, 16));
  if (stored != actual) {
    return Status::Corruption(Where(path, offset) +
                              "value entry header checksum mismatch (stored " +
                              Hex(stored) + ", computed " + Hex(actual) + ")");
  }
  EntryHeader e{DecodeFixed64(h.data()), DecodeFixed64(h.data() + 8)};
  if (e.length >= kMaxEntryBytes) {
    return Status::Corruption(Where(path, offset) + "value entry length " +
                              std::to_string(e.length) + " is implausible");
  }
  return e;
}

}  // namespace

// ---- ValueRef ----

void ValueRef::EncodeTo(std::string* dst) const {
  dst->push_back(static_cast<char>(kValueRefVersion));
  PutVarint64(dst, file_number);
  PutVarint64(dst, offset);
  PutVarint64(dst, size);
  PutFixed64(dst, checksum);
}

Result<ValueRef> ValueRef::DecodeFrom(std::string_view input) {
  const size_t total = input.size();
  if (input.empty()) return Status::Corruption("value ref: empty encoding");
  if (static_cast<uint8_t>(input[0]) != kValueRefVersion) {
    return Status::Corruption("value ref: unknown version " +
                              std::to_string(static_cast<uint8_t>(input[0])) +
                              " (expected 1)");
  }
  input.remove_prefix(1);
  ValueRef ref;
  if (!GetVarint64(&input, &ref.file_number) ||
      !GetVarint64(&input, &ref.offset) || !GetVarint64(&input, &ref.size) ||
      !GetFixed64(&input, &ref.checksum)) {
    return Status::Corruption("value ref: encoding of " +
                              std::to_string(total) + " bytes is cut short");
  }
  if (!input.empty()) {
    return Status::Corruption("value ref: " + std::to_string(input.size()) +
                              " unexpected trailing bytes");
  }
  return ref;
}

// ---- ValueFileWriter ----

Result<std::unique_ptr<ValueFileWriter>> ValueFileWriter::Create(
    Env* env, std::string path, uint64_t file_number, uint32_t flags) {
  auto file = env->NewWritableFile(path);
  if (!file.ok()) {
    return file.status().WithContext("creating value file " + path);
  }
  std::unique_ptr<ValueFileWriter> writer(new ValueFileWriter(
      env, std::move(path), file_number, std::move(file).value()));
  char header[kValueFileHeaderSize];
  EncodeFileHeader(file_number, flags, header);
  Status s = writer->file_->Append(std::string_view(header, sizeof(header)));
  if (!s.ok()) {
    return s.WithContext(Where(writer->path_, 0) + "writing file header");
  }
  writer->size_ = kValueFileHeaderSize;
  return writer;
}

ValueFileWriter::ValueFileWriter(Env* env, std::string path,
                                 uint64_t file_number,
                                 std::unique_ptr<WritableFile> file)
    : env_(env),
      path_(std::move(path)),
      file_number_(file_number),
      file_(std::move(file)) {}

ValueFileWriter::~ValueFileWriter() {
  if (!closed_) file_->Close().IgnoreError();
}

Status ValueFileWriter::Fail(Status status) {
  if (error_.ok()) error_ = status;
  return status;
}

Result<ValueRef> ValueFileWriter::Add(std::string_view value) {
  if (!error_.ok()) return error_;
  if (closed_) {
    return Status::InvalidArgument("value file " + path_ + ": Add after Close");
  }
  if (value.size() >= kMaxEntryBytes) {
    return Status::InvalidArgument("value file " + path_ + ": value of " +
                                   std::to_string(value.size()) +
                                   " bytes is too large");
  }
  ValueRef ref;
  ref.file_number = file_number_;
  ref.offset = size_ + kValueEntryHeaderSize;
  ref.size = value.size();
  ref.checksum = Checksum64(value);

  char header[kValueEntryHeaderSize];
  EncodeFixed64(header, ref.size);
  EncodeFixed64(header + 8, ref.checksum);
  EncodeFixed64(header + 16, Checksum64(std::string_view(header, 16)));
  // Two appends: copying a 64 MiB value into one buffer would cost more than
  // the extra call.
  Status s = file_->Append(std::string_view(header, sizeof(header)));
  if (s.ok()) s = file_->Append(value);
  if (!s.ok()) {
    return Fail(s.WithContext(Where(path_, size_) + "appending a value of " +
                              std::to_string(value.size()) + " bytes"));
  }
  size_ = ref.offset + ref.size;
  return ref;
}

Status ValueFileWriter::Flush() {
  if (!error_.ok()) return error_;
  if (closed_)
    return Status::InvalidArgument("value file " + path_ +
                                   ": Flush after Close");
  Status s = file_->Flush();
  if (!s.ok()) return Fail(s.WithContext("flushing value file " + path_));
  return s;
}

Status ValueFileWriter::Sync() {
  if (!error_.ok()) return error_;
  if (closed_)
    return Status::InvalidArgument("value file " + path_ +
                                   ": Sync after Close");
  Status s = file_->Sync();
  if (!s.ok()) return Fail(s.WithContext("syncing value file " + path_));
  if (!dir_synced_) {
    s = env_->SyncDir(ParentDir(path_));
    if (!s.ok()) {
      return Fail(
          s.WithContext("syncing the directory of value file " + path_));
    }
    dir_synced_ = true;
  }
  return Status::OK();
}

Status ValueFileWriter::Close() {
  if (closed_) return error_;
  closed_ = true;
  Status s = file_->Close();
  if (!s.ok()) return Fail(s.WithContext("closing value file " + path_));
  return error_;
}

// ---- ValueFileReader ----

Result<std::unique_ptr<ValueFileReader>> ValueFileReader::Open(
    Env* env, std::string path) {
  // The size first: the file maps (and is read) at least that far.
  Result<uint64_t> size = env->GetFileSize(path);
  if (!size.ok())
    return size.status().WithContext("opening value file " + path);
  auto file = env->NewRandomAccessFile(path);
  if (!file.ok())
    return file.status().WithContext("opening value file " + path);
  std::string header;
  TABLETFS_RETURN_IF_ERROR(ReadExact(**file, path, 0, kValueFileHeaderSize,
                                     "the file header", &header));
  TABLETFS_ASSIGN_OR_RETURN(FileHeader h, DecodeFileHeader(path, header));
  return std::unique_ptr<ValueFileReader>(new ValueFileReader(
      std::move(path), h.file_number, *size, std::move(file).value()));
}

ValueFileReader::ValueFileReader(std::string path, uint64_t file_number,
                                 uint64_t size,
                                 std::unique_ptr<RandomAccessFile> file)
    : path_(std::move(path)),
      file_number_(file_number),
      size_(size),
      file_(std::move(file)) {}

ValueFileReader::~ValueFileReader() = default;

Result<std::string> ValueFileReader::Read(const ValueRef& ref) const {
  if (ref.file_number != file_number_) {
    return Status::InvalidArgument("value ref for file number " +
                                   std::to_string(ref.file_number) +
                                   " read from " + path_ + " (file number " +
                                   std::to_string(file_number_) + ")");
  }
  // An offset beyond any real file is damage too; past 2^63 pread(2) would
  // fail EINVAL, an IOError the engine takes for a failing disk (sticky).
  if (ref.offset < kValueFileHeaderSize + kValueEntryHeaderSize ||
      ref.offset > kMaxFileOffset || ref.size >= kMaxEntryBytes) {
    return Status::Corruption(Where(path_, ref.offset) +
                              "value ref out of range (size " +
                              std::to_string(ref.size) + ")");
  }
  const uint64_t header_offset = ref.offset - kValueEntryHeaderSize;
  std::string header;
  TABLETFS_RETURN_IF_ERROR(ReadExact(*file_, path_, header_offset,
                                     kValueEntryHeaderSize,
                                     "a value entry header", &header));
  TABLETFS_ASSIGN_OR_RETURN(EntryHeader entry,
                            DecodeEntryHeader(path_, header_offset, header));
  if (entry.length != ref.size || entry.checksum != ref.checksum) {
    return Status::Corruption(
        Where(path_, header_offset) + "value entry (length " +
        std::to_string(entry.length) + ", checksum " + Hex(entry.checksum) +
        ") does not match the ref (size " + std::to_string(ref.size) +
        ", checksum " + Hex(ref.checksum) + ")");
  }
  std::string value;
  TABLETFS_RETURN_IF_ERROR(
      ReadExact(*file_, path_, ref.offset, ref.size, "a value", &value));
  uint64_t actual = Checksum64(value);
  if (actual != ref.checksum) {
    return Status::Corruption(Where(path_, ref.offset) +
                              "value checksum mismatch (expected " +
                              Hex(ref.checksum) + ", computed " + Hex(actual) +
                              ", " + std::to_string(ref.size) + " bytes)");
  }
  return value;
}

// ---- Standalone scan ----

Status ScanValueFile(Env* env, const std::string& path,
                     const std::function<void(const ValueRef&)>& fn) {
  auto file_or = env->NewRandomAccessFile(path);
  if (!file_or.ok()) {
    return file_or.status().WithContext("opening value file " + path);
  }
  const RandomAccessFile& file = **file_or;
  TABLETFS_ASSIGN_OR_RETURN(uint64_t file_size, env->GetFileSize(path));
  std::string buffer;
  TABLETFS_RETURN_IF_ERROR(ReadExact(file, path, 0, kValueFileHeaderSize,
                                     "the file header", &buffer));
  TABLETFS_ASSIGN_OR_RETURN(FileHeader h, DecodeFileHeader(path, buffer));
  const uint64_t file_number = h.file_number;
  // A file appended to at commit may end in an entry a crash or a failed
  // append cut short (no reference points at it): its end, not damage.
  const bool may_end_torn = (h.flags & kValueFileMayEndTorn) != 0;
  uint64_t offset = kValueFileHeaderSize;
  while (offset < file_size) {
    if (may_end_torn && file_size - offset < kValueEntryHeaderSize) break;
    if (file_size - offset < kValueEntryHeaderSize) {
      return Status::Corruption(
          Where(path, offset) + "truncated: the file ends inside a value " +
          "entry header (" + std::to_string(file_size - offset) + " of " +
          std::to_string(kValueEntryHeaderSize) + " bytes)");
    }
    TABLETFS_RETURN_IF_ERROR(ReadExact(file, path, offset,
                                       kValueEntryHeaderSize,
                                       "a value entry header", &buffer));
    if (may_end_torn && buffer.find_first_not_of('\0') == std::string::npos) {
      break;  // never written out (zeros after a power cut)
    }
    TABLETFS_ASSIGN_OR_RETURN(EntryHeader entry,
                              DecodeEntryHeader(path, offset, buffer));
    ValueRef ref{file_number, offset + kValueEntryHeaderSize, entry.length,
                 entry.checksum};
    if (may_end_torn && entry.length > file_size - ref.offset) break;
    if (entry.length > file_size - ref.offset) {
      return Status::Corruption(
          Where(path, offset) + "truncated: the value entry of " +
          std::to_string(entry.length) + " bytes runs past the end of the " +
          "file (" + std::to_string(file_size) + " bytes)");
    }
    TABLETFS_RETURN_IF_ERROR(
        ReadExact(file, path, ref.offset, ref.size, "a value", &buffer));
    uint64_t actual = Checksum64(buffer);
    if (actual != entry.checksum) {
      return Status::Corruption(
          Where(path, ref.offset) + "value checksum mismatch (stored " +
          Hex(entry.checksum) + ", computed " + Hex(actual) + ", " +
          std::to_string(ref.size) + " bytes)");
    }
    if (fn) fn(ref);
    offset = ref.offset + ref.size;
  }
  return Status::OK();
}

Status VerifyValueFile(Env* env, const std::string& path) {
  return ScanValueFile(env, path, nullptr);
}

}  // namespace tabletfs
