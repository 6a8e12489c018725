#include "fs/timestamp.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <limits>

namespace tabletfs::fs {
namespace {

constexpr int64_t kMicrosPerSecond = 1000000;
constexpr int64_t kSecondsPerDay = 86400;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Reads exactly `n` digits at text[*pos]; false if any is not a digit.
bool ReadDigits(std::string_view text, size_t* pos, size_t n, int64_t* value) {
  if (text.size() - *pos < n) return false;
  int64_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = text[*pos + i];
    if (!IsDigit(c)) return false;
    v = v * 10 + (c - '0');
  }
  *pos += n;
  *value = v;
  return true;
}

bool ReadChar(std::string_view text, size_t* pos, char c) {
  if (*pos >= text.size() || text[*pos] != c) return false;
  ++*pos;
  return true;
}

bool IsLeapYear(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int DaysInMonth(int64_t y, int64_t m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30,
                                  31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeapYear(y) ? 29 : kDays[m - 1];
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
// days_from_civil), valid for every year an int64 of microseconds reaches.
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void CivilFromDays(int64_t z, int64_t* y, int64_t* m, int64_t* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yoe + era * 400 + (*m <= 2);
}

FsError Invalid(std::string_view text, std::string_view why) {
  return FsError::Of(
      EINVAL, "bad timestamp '" + std::string(text) + "': " + std::string(why) +
                  "; expected decimal microseconds since the epoch or "
                  "ISO-8601 UTC like 2026-11-21T10:00:00Z or "
                  "2026-11-21T10:00:00.5+00:00");
}

FsError ParseDecimal(std::string_view text, int64_t* micros) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t v = 0;
  for (char c : text) {
    if (!IsDigit(c)) return Invalid(text, "not a number");
    const int digit = c - '0';
    if (v > (kMax - digit) / 10) {
      return Invalid(text, "out of range (more than 9223372036854775807)");
    }
    v = v * 10 + digit;
  }
  *micros = v;
  return FsError::Ok();
}

FsError ParseIso8601(std::string_view text, int64_t* micros) {
  size_t pos = 0;
  int64_t year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!ReadDigits(text, &pos, 4, &year) || !ReadChar(text, &pos, '-') ||
      !ReadDigits(text, &pos, 2, &month) || !ReadChar(text, &pos, '-') ||
      !ReadDigits(text, &pos, 2, &day)) {
    return Invalid(text, "date is not YYYY-MM-DD");
  }
  if (!ReadChar(text, &pos, 'T')) {
    return Invalid(text, "expected 'T' between date and time");
  }
  if (!ReadDigits(text, &pos, 2, &hour) || !ReadChar(text, &pos, ':') ||
      !ReadDigits(text, &pos, 2, &minute) || !ReadChar(text, &pos, ':') ||
      !ReadDigits(text, &pos, 2, &second)) {
    return Invalid(text, "time is not HH:MM:SS");
  }
  int64_t fraction = 0;
  if (ReadChar(text, &pos, '.')) {
    size_t digits = 0;
    while (pos < text.size() && IsDigit(text[pos])) {
      if (++digits > 6) {
        return Invalid(text, "more than 6 fraction digits (microseconds)");
      }
      fraction = fraction * 10 + (text[pos++] - '0');
    }
    if (digits == 0) return Invalid(text, "no digits after '.'");
    for (; digits < 6; ++digits) fraction *= 10;
  }
  std::string_view zone = text.substr(pos);
  if (zone != "Z" && zone != "+00:00") {
    return Invalid(text, "zone must be Z or +00:00 (UTC)");
  }
  if (month < 1 || month > 12) return Invalid(text, "month not in 01-12");
  if (day < 1 || day > DaysInMonth(year, month)) {
    return Invalid(text, "no such day in that month");
  }
  if (hour > 23) return Invalid(text, "hour not in 00-23");
  if (minute > 59) return Invalid(text, "minute not in 00-59");
  if (second > 59) return Invalid(text, "second not in 00-59");
  if (year < 1970) return Invalid(text, "before 1970-01-01T00:00:00Z");
  // Year <= 9999 keeps this far below INT64_MAX (about year 294247).
  const int64_t seconds = DaysFromCivil(year, month, day) * kSecondsPerDay +
                          hour * 3600 + minute * 60 + second;
  *micros = seconds * kMicrosPerSecond + fraction;
  return FsError::Ok();
}

}  // namespace

FsError ParseTimestamp(std::string_view text, int64_t* micros) {
  if (text.empty()) return Invalid(text, "empty");
  // A decimal T of four digits or fewer could be mistaken for a year only
  // if followed by '-'; so the first non-digit decides the form.
  size_t first_non_digit = 0;
  while (first_non_digit < text.size() && IsDigit(text[first_non_digit])) {
    ++first_non_digit;
  }
  if (first_non_digit == text.size()) return ParseDecimal(text, micros);
  if (first_non_digit == 4 && text[4] == '-') return ParseIso8601(text, micros);
  return Invalid(text, "neither a number nor a date");
}

std::string FormatIso8601(int64_t micros) {
  // Floor division, so times before the epoch format correctly too.
  int64_t seconds = micros / kMicrosPerSecond;
  int64_t fraction = micros % kMicrosPerSecond;
  if (fraction < 0) {
    fraction += kMicrosPerSecond;
    --seconds;
  }
  int64_t days = seconds / kSecondsPerDay;
  int64_t second_of_day = seconds % kSecondsPerDay;
  if (second_of_day < 0) {
    second_of_day += kSecondsPerDay;
    --days;
  }
  int64_t y, m, d;
  CivilFromDays(days, &y, &m, &d);
  char buf[64];
  int n = std::snprintf(buf, sizeof(buf),
                        "%04" PRId64 "-%02" PRId64 "-%02" PRId64 "T%02" PRId64
                        ":%02" PRId64 ":%02" PRId64,
                        y, m, d, second_of_day / 3600, second_of_day / 60 % 60,
                        second_of_day % 60);
  std::string out(buf, static_cast<size_t>(n));
  if (fraction != 0) {
    std::snprintf(buf, sizeof(buf), ".%06" PRId64, fraction);
    out += buf;
  }
  out += 'Z';
  return out;
}

int64_t FloorToGranularity(int64_t micros, int64_t granularity) {
  return micros - micros % granularity;
}

int64_t NextAbove(int64_t micros, int64_t granularity) {
  return FloorToGranularity(micros, granularity) + granularity;
}

}  // namespace tabletfs::fs
