#include "store/wal/log_reader.h"

#include <algorithm>
#include <utility>

#include "store/util/coding.h"
#include "store/util/hash.h"
#include "store/wal/log_format.h"

namespace tabletfs {
namespace {

struct Header {
  uint64_t checksum;
  size_t length;
  uint8_t type;
};

// REQUIRES: at least kLogHeaderSize bytes at p.
Header ParseHeader(const char* p) {
  Header h;
  h.checksum = DecodeFixed64(p);
  h.length = static_cast<uint8_t>(p[kLogChecksumSize]) |
             (size_t{static_cast<uint8_t>(p[kLogChecksumSize + 1])} << 8);
  h.type = static_cast<uint8_t>(p[kLogChecksumSize + 2]);
  return h;
}

// The checksum of the fragment whose header starts at block[pos].
// REQUIRES: the fragment lies inside block.
uint64_t ComputeChecksum(std::string_view block, size_t pos, size_t length) {
  return Checksum64(block.substr(pos + kLogChecksumSize, 3 + length));
}

bool AllZero(std::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
}

std::string Hex(uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s = "0x";
  for (int shift = 60; shift >= 0; shift -= 4) s += kDigits[(v >> shift) & 0xf];
  return s;
}

}  // namespace

LogReader::LogReader(std::unique_ptr<SequentialFile> file,
                     std::string file_name)
    : file_(std::move(file)),
      file_name_(std::move(file_name)),
      buffer_(new char[kLogBlockSize]) {}

LogReader::~LogReader() = default;

std::string LogReader::Where(uint64_t offset) const {
  return "file " + file_name_ + " offset " + std::to_string(offset) + ": ";
}

bool LogReader::Finish(Status status, Status* out) {
  done_ = true;
  final_status_ = status;
  *out = std::move(status);
  return false;
}

bool LogReader::ReadNextBlock(Status* io_status) {
  block_start_ += block_.size();
  block_ = {};
  pos_ = 0;
  if (eof_) return false;
  Status s = file_->Read(kLogBlockSize, &block_, buffer_.get());
  if (!s.ok()) {
    *io_status = s.WithContext(Where(block_start_) + "reading log block");
    block_ = {};
    return false;
  }
  // The SequentialFile contract: a short read means end of file.
  if (block_.size() < kLogBlockSize) eof_ = true;
  return !block_.empty();
}

LogReader::FragmentKind LogReader::ReadFragment(Fragment* fragment,
                                                Status* io_status) {
  while (true) {
    size_t left = block_.size() - pos_;
    if (left < kLogHeaderSize) {
      if (!eof_) {
        // Block trailer padding (or the start of the file): next block.
        if (!ReadNextBlock(io_status)) {
          return io_status->ok() ? FragmentKind::kEndOfFile
                                 : FragmentKind::kIOError;
        }
        continue;
      }
      if (left == 0) return FragmentKind::kEndOfFile;
      fragment->offset = block_start_ + pos_;
      // Trailer padding cut short by the end of the file is harmless; any
      // other stub is a header cut short.
      bool trailer = pos_ + kLogHeaderSize > kLogBlockSize;
      bool zeros = AllZero(block_.substr(pos_));
      pos_ = block_.size();
      return trailer && zeros ? FragmentKind::kEndOfFile
                              : FragmentKind::kTruncated;
    }

    Header h = ParseHeader(block_.data() + pos_);
    fragment->offset = block_start_ + pos_;
    if (kLogHeaderSize + h.length > left) {
      // Either the file was cut inside the payload or the length field is
      // damaged; FindLaterRecordStart() tells the two apart.
      fragment->problem = "fragment length " + std::to_string(h.length) +
                          (eof_ ? " extends past the end of the file ("
                                : " exceeds its block (") +
                          std::to_string(left - kLogHeaderSize) +
                          " bytes left)";
      return FragmentKind::kBad;
    }
    uint64_t actual = ComputeChecksum(block_, pos_, h.length);
    if (actual != h.checksum) {
      if (AllZero(block_.substr(pos_, kLogHeaderSize))) {
        fragment->problem =
            "zero-filled fragment header (preallocated or unwritten space)";
      } else {
        fragment->problem = "checksum mismatch (stored " + Hex(h.checksum) +
                            ", computed " + Hex(actual) + ")";
      }
      return FragmentKind::kBad;
    }
    fragment->type = h.type;
    fragment->payload = block_.substr(pos_ + kLogHeaderSize, h.length);
    pos_ += kLogHeaderSize + h.length;
    return FragmentKind::kFragment;
  }
}

bool LogReader::IsIntactRecordStart(std::string_view block, size_t pos) {
  if (pos + kLogHeaderSize > block.size()) return false;
  Header h = ParseHeader(block.data() + pos);
  if (h.type != static_cast<uint8_t>(LogFragmentType::kFull) &&
      h.type != static_cast<uint8_t>(LogFragmentType::kFirst)) {
    return false;
  }
  if (pos + kLogHeaderSize + h.length > block.size()) return false;
  return ComputeChecksum(block, pos, h.length) == h.checksum;
}

bool LogReader::FindLaterRecordStart(uint64_t* offset, Status* io_status) {
  // The damaged fragment's length cannot be trusted, so the rest of its block
  // is searched at every byte. Later blocks start at a fragment header; their
  // fragments are walked by length, falling back to a byte search past a bad
  // one. The byte search costs a hash only where the type byte is kFull or
  // kFirst and the length fits, so it stays cheap on ordinary data.
  size_t from = pos_ + 1;
  bool walk = false;
  rest_zero_ = AllZero(block_.substr(pos_));
  while (true) {
    if (walk) rest_zero_ = rest_zero_ && AllZero(block_);
    size_t p = from;
    if (walk) {
      while (p + kLogHeaderSize <= block_.size()) {
        Header h = ParseHeader(block_.data() + p);
        bool fits = p + kLogHeaderSize + h.length <= block_.size();
        if (!fits || ComputeChecksum(block_, p, h.length) != h.checksum) break;
        if (h.type == static_cast<uint8_t>(LogFragmentType::kFull) ||
            h.type == static_cast<uint8_t>(LogFragmentType::kFirst)) {
          *offset = block_start_ + p;
          return true;
        }
        p += kLogHeaderSize + h.length;
      }
    }
    for (; p + kLogHeaderSize <= block_.size(); ++p) {
      if (IsIntactRecordStart(block_, p)) {
        *offset = block_start_ + p;
        return true;
      }
    }
    if (!ReadNextBlock(io_status)) return false;
    from = 0;
    walk = true;
  }
}

bool LogReader::ReadRecord(std::string* record, Status* status) {
  if (done_) {
    *status = final_status_;
    return false;
  }
  record->clear();
  bool in_record = false;
  uint64_t record_start = 0;
  Fragment fragment;
  while (true) {
    Status io_status;
    switch (ReadFragment(&fragment, &io_status)) {
      case FragmentKind::kIOError:
        return Finish(io_status, status);

      case FragmentKind::kEndOfFile:
        torn_tail_ = in_record;
        return Finish(Status::OK(), status);

      case FragmentKind::kTruncated:
        torn_tail_ = true;
        zero_tail_ = !in_record &&
                     AllZero(block_.substr(fragment.offset - block_start_));
        return Finish(Status::OK(), status);

      case FragmentKind::kBad: {
        uint64_t later = 0;
        if (FindLaterRecordStart(&later, &io_status)) {
          std::string msg = Where(fragment.offset) + fragment.problem;
          if (in_record) {
            msg += " in the record starting at offset " +
                   std::to_string(record_start);
          }
          msg += "; an intact record starts later at offset " +
                 std::to_string(later) + ", so this is not a torn tail";
          return Finish(Status::Corruption(msg), status);
        }
        if (!io_status.ok()) return Finish(io_status, status);
        torn_tail_ = true;
        zero_tail_ = !in_record && rest_zero_;
        return Finish(Status::OK(), status);
      }

      case FragmentKind::kFragment:
        break;
    }

    uint64_t fragment_end =
        fragment.offset + kLogHeaderSize + fragment.payload.size();
    switch (static_cast<LogFragmentType>(fragment.type)) {
      case LogFragmentType::kFull:
      case LogFragmentType::kFirst:
        if (in_record) {
          return Finish(
              Status::Corruption(
                  Where(record_start) +
                  "record has no last fragment; the next record starts at "
                  "offset " +
                  std::to_string(fragment.offset)),
              status);
        }
        record->assign(fragment.payload);
        if (fragment.type == static_cast<uint8_t>(LogFragmentType::kFull)) {
          last_record_end_ = fragment_end;
          return true;
        }
        in_record = true;
        record_start = fragment.offset;
        break;

      case LogFragmentType::kMiddle:
      case LogFragmentType::kLast:
        if (!in_record) {
          return Finish(
              Status::Corruption(Where(fragment.offset) +
                                 "continuation fragment (type " +
                                 std::to_string(fragment.type) +
                                 ") without a first fragment before it"),
              status);
        }
        record->append(fragment.payload);
        if (fragment.type == static_cast<uint8_t>(LogFragmentType::kLast)) {
          last_record_end_ = fragment_end;
          return true;
        }
        break;

      default:
        // Intact but unknown: written by a newer format or a bug. Skipping it
        // could drop committed data, so stop here.
        return Finish(Status::Corruption(
                          Where(fragment.offset) + "unknown fragment type " +
                          std::to_string(fragment.type) + " (expected 1..4)"),
                      status);
    }
  }
}

}  // namespace tabletfs
