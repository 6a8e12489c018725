#include "store/table/block.h"

#include <cstring>
#include <memory>

#include "store/util/coding.h"

namespace tabletfs {

Block::Block(CreateKey, BlockContents contents,
             std::shared_ptr<const std::string> file_name, uint64_t offset,
             uint32_t restart_offset, uint32_t num_restarts)
    : contents_(std::move(contents)),
      name_(std::move(file_name)),
      offset_(offset),
      restart_offset_(restart_offset),
      num_restarts_(num_restarts) {}

std::string Block::context() const {
  return offset_ == kNoOffset ? *name_ : BlockContext(*name_, offset_);
}

Result<std::shared_ptr<const Block>> Block::Create(std::string_view contents,
                                                   std::string context) {
  BlockContents copy{BlockBuffer(contents.size()), contents.size()};
  if (!contents.empty()) {
    std::memcpy(copy.data.get(), contents.data(), contents.size());
  }
  return Create(std::move(copy),
                std::make_shared<const std::string>(std::move(context)),
                kNoOffset);
}

Result<std::shared_ptr<const Block>> Block::Create(
    BlockContents block, std::shared_ptr<const std::string> file_name,
    uint64_t offset) {
  std::string_view contents = block.view();
  // Spelled out only when there is something to report.
  auto context = [&] {
    return offset == kNoOffset ? *file_name : BlockContext(*file_name, offset);
  };
  if (contents.size() < 4) {
    return Status::Corruption(context(),
                              "block shorter than its restart count");
  }
  uint32_t num_restarts = DecodeFixed32(contents.data() + contents.size() - 4);
  uint64_t max_restarts = (contents.size() - 4) / 4;
  if (num_restarts == 0 || num_restarts > max_restarts) {
    return Status::Corruption(
        context(), "bad restart count " + std::to_string(num_restarts));
  }
  uint32_t restart_offset =
      static_cast<uint32_t>(contents.size() - 4 - 4 * uint64_t{num_restarts});
  // Restart points must increase and lie inside the entries (an empty block
  // has one restart, at 0), so the iterator may trust them.
  for (uint32_t i = 0; i < num_restarts; ++i) {
    uint32_t r = DecodeFixed32(contents.data() + restart_offset + 4 * i);
    bool in_range = r < restart_offset || (r == 0 && restart_offset == 0);
    if (!in_range ||
        (i > 0 &&
         r <= DecodeFixed32(contents.data() + restart_offset + 4 * (i - 1)))) {
      return Status::Corruption(context(),
                                "bad restart point " + std::to_string(i));
    }
  }
  return std::make_shared<const Block>(CreateKey(), std::move(block),
                                       std::move(file_name), offset,
                                       restart_offset, num_restarts);
}

std::unique_ptr<Iterator> Block::NewIterator(
    std::shared_ptr<const Block> block) {
  return std::make_unique<BlockIterator>(std::move(block));
}

}  // namespace tabletfs
