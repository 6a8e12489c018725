// libFuzzer target for store/table/table.h (the SSTable reader).
//
// The first input byte picks a mode:
//   even: the rest of the input is a table file. Open() must return a Table
//         or Corruption/NotSupported naming the file; an opened table must
//         iterate in strictly increasing key order, Seek() must land on a
//         key >= its target, and VerifyChecksums(), MayContain() and
//         ApproximateOffsetOf() must not crash.
//   odd:  the input describes entries, options and one damage. A table is
//         built with TableBuilder, damaged (one byte flipped, or cut short)
//         and read back. Every byte of a table is covered by a checksum or
//         checked (footer magic), so a flipped byte must make Open() or
//         VerifyChecksums() fail; and whatever the damage, a read never
//         returns wrong data: iteration gives a prefix of the entries, a
//         Seek() that finds an entry finds the right one.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "store/table/block_cache.h"
#include "store/table/table.h"
#include "store/table/table_builder.h"
#include "tests/fuzz/fuzz_util.h"

namespace tabletfs::fuzz {
namespace {

constexpr char kFileName[] = "fuzz.sst";

void CheckOpenError(const Status& s) {
  FUZZ_CHECK(s.IsCorruption() || s.IsNotSupported(), "Open: %s",
             s.ToString().c_str());
  FUZZ_CHECK(s.message().find(kFileName) != std::string::npos,
             "Open error without the file name: %s", s.ToString().c_str());
}

Result<std::shared_ptr<Table>> OpenTable(std::string_view file,
                                         const TableOptions& options) {
  return Table::Open(options, std::make_unique<StringRandomAccessFile>(file),
                     file.size(), /*cache_id=*/1, kFileName);
}

void FuzzRaw(std::string_view file, bool use_cache) {
  BlockCache cache(1 << 16);
  TableOptions options;
  if (use_cache) options.block_cache = &cache;
  auto table = OpenTable(file, options);
  if (!table.ok()) {
    CheckOpenError(table.status());
    return;
  }
  (*table)->VerifyChecksums().IgnoreError();
  // Twice: the second pass reads the blocks from the cache.
  for (int pass = 0; pass < 2; ++pass) {
    auto it = (*table)->NewIterator(/*fill_cache=*/true);
    std::string prev;
    bool first = true;
    int n = 0;
    for (it->SeekToFirst(); it->Valid() && n < 100000; it->Next(), ++n) {
      std::string key(it->key());
      FUZZ_CHECK(first || prev < key, "keys out of order at entry %d", n);
      (void)it->value().size();
      prev = std::move(key);
      first = false;
    }
    if (!it->Valid()) it->status().IgnoreError();
  }
  // Seek to a few targets taken from the file itself.
  auto it = (*table)->NewIterator(/*fill_cache=*/false);
  for (size_t i = 0; i < 8 && i * 7 < file.size(); ++i) {
    std::string_view target = file.substr(i * 7, i * 3 % 17);
    it->Seek(target);
    if (it->Valid()) {
      FUZZ_CHECK(it->key() >= target, "Seek landed before its target");
    }
    (void)(*table)->MayContain(target);
    FUZZ_CHECK((*table)->ApproximateOffsetOf(target) <= file.size(),
               "ApproximateOffsetOf past the file");
  }
}

void FuzzStructured(FuzzedDataProvider& fdp) {
  TableOptions options;
  options.block_size = fdp.ConsumeIntegralInRange<size_t>(1, 4096);
  options.restart_interval = fdp.ConsumeIntegralInRange<int>(1, 32);
  options.group_size = fdp.ConsumeIntegralInRange<size_t>(1, 16384);
  options.bloom_bits_per_key = fdp.ConsumeBool() ? 10 : 0;
  Compression compression =
      fdp.ConsumeBool() ? Compression::kLz4 : Compression::kNone;
  options.compression = [compression](std::string_view) { return compression; };
  BlockCache cache(1 << 16);
  if (fdp.ConsumeBool()) options.block_cache = &cache;

  std::map<std::string, std::string> model;
  int n = fdp.ConsumeIntegralInRange<int>(0, 300);
  for (int i = 0; i < n; ++i) {
    std::string key = fdp.ConsumeRandomLengthString(40);
    size_t len = fdp.ConsumeIntegralInRange<size_t>(0, 300);
    // Compressible or not, pseudo-random either way (see fuzz_util.h).
    std::string value = fdp.ConsumeBool()
                            ? std::string(len, static_cast<char>('a' + i % 26))
                            : PseudoRandomBytes(i, len);
    model[key] = value;
  }

  std::string file;
  StringWritableFile sink(&file);
  TableBuilder builder(options, &sink);
  for (const auto& [k, v] : model) builder.Add(k, v);
  FUZZ_CHECK(builder.Finish().ok(), "Finish failed");
  FUZZ_CHECK(builder.FileSize() == file.size(), "FileSize %llu != %zu",
             static_cast<unsigned long long>(builder.FileSize()), file.size());

  enum Damage { kNone, kFlip, kTruncate };
  Damage damage = static_cast<Damage>(fdp.ConsumeIntegralInRange<int>(0, 2));
  size_t pos = fdp.ConsumeIntegralInRange<size_t>(0, file.size() - 1);
  uint8_t mask = fdp.ConsumeIntegralInRange<uint8_t>(1, 255);
  if (damage == kFlip) file[pos] = static_cast<char>(file[pos] ^ mask);
  if (damage == kTruncate) file.resize(pos);

  auto table = OpenTable(file, options);
  if (!table.ok()) {
    FUZZ_CHECK(damage != kNone, "undamaged table: %s",
               table.status().ToString().c_str());
    CheckOpenError(table.status());
    return;
  }
  Status verify = (*table)->VerifyChecksums();
  if (damage == kNone) {
    FUZZ_CHECK(verify.ok(), "undamaged table: Verify %s",
               verify.ToString().c_str());
  } else if (damage == kFlip) {
    FUZZ_CHECK(!verify.ok(),
               "byte %zu of %zu flipped (^%02x), Open and "
               "VerifyChecksums both OK",
               pos, file.size(), mask);
    FUZZ_CHECK(verify.IsCorruption() || verify.IsNotSupported(), "Verify: %s",
               verify.ToString().c_str());
    FUZZ_CHECK(verify.message().find(kFileName) != std::string::npos,
               "Verify error without the file name: %s",
               verify.ToString().c_str());
  }

  // Iteration: a prefix of the model, exactly; all of it when undamaged.
  auto it = (*table)->NewIterator();
  auto expected = model.begin();
  size_t count = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++expected, ++count) {
    FUZZ_CHECK(expected != model.end(), "more entries than were written");
    FUZZ_CHECK(it->key() == expected->first, "entry %zu: wrong key", count);
    FUZZ_CHECK(it->value() == expected->second, "entry %zu: wrong value",
               count);
  }
  if (damage == kNone) {
    FUZZ_CHECK(it->status().ok() && expected == model.end(),
               "undamaged table: %zu of %zu entries, %s", count, model.size(),
               it->status().ToString().c_str());
  } else if (expected != model.end()) {
    FUZZ_CHECK(!it->status().ok(),
               "damaged table ended silently after %zu of %zu entries", count,
               model.size());
  }

  // Point lookups, as the engine does them: Seek to a key.
  int probes = 0;
  for (const auto& [k, v] : model) {
    if (++probes > 50) break;
    it->Seek(k);
    if (it->Valid()) {
      FUZZ_CHECK(it->key() == k && it->value() == v,
                 "Seek to a key found "
                 "another entry");
    } else {
      FUZZ_CHECK(damage != kNone, "undamaged table: Seek lost a key (%s)",
                 it->status().ToString().c_str());
      FUZZ_CHECK(!it->status().ok(), "Seek lost a key without an error");
    }
    if (damage == kNone) {
      FUZZ_CHECK((*table)->MayContain(k), "Bloom filter lost a key");
    }
  }
}

}  // namespace
}  // namespace tabletfs::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if ((data[0] & 1) == 0) {
    tabletfs::fuzz::FuzzRaw(
        std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1),
        (data[0] & 2) != 0);
  } else {
    FuzzedDataProvider fdp(data + 1, size - 1);
    tabletfs::fuzz::FuzzStructured(fdp);
  }
  return 0;
}
