#include "store/schema.h"

#include <cctype>
#include <limits>
#include <string>
#include <vector>

namespace tabletfs {

namespace {

struct DurationUnit {
  std::string_view name;
  int64_t micros;
};

// Longest names first so "ms" is not read as "m" followed by "s".
constexpr DurationUnit kUnits[] = {
    {"ms", 1000},
    {"us", 1},
    {"d", 86400LL * 1000 * 1000},
    {"h", 3600LL * 1000 * 1000},
    {"m", 60LL * 1000 * 1000},
    {"s", 1000 * 1000},
};

bool IsNameStart(char c) {
  return c == '_' || std::isalnum(static_cast<unsigned char>(c));
}
bool IsNameChar(char c) { return IsNameStart(c) || c == '-' || c == '.'; }

Status ValidateName(std::string_view what, std::string_view name,
                    size_t max_len) {
  if (name.empty()) {
    return Status::InvalidArgument(std::string(what) + " name is empty");
  }
  if (name.size() > max_len) {
    return Status::InvalidArgument(std::string(what) + " name is longer than " +
                                   std::to_string(max_len) + " bytes");
  }
  if (!IsNameStart(name[0])) {
    return Status::InvalidArgument(std::string(what) + " name '" +
                                   std::string(name) +
                                   "' must start with a letter, digit or '_'");
  }
  for (char c : name) {
    if (!IsNameChar(c)) {
      return Status::InvalidArgument(
          std::string(what) + " name '" + std::string(name) +
          "' may hold only letters, digits, '_', '-' and '.'");
    }
  }
  return Status::OK();
}

// Recursive-descent parser over whitespace-separated tokens and parentheses:
//   expr   := term (("or" | "||") term)*
//   term   := factor (("and" | "&&") factor)*
//   factor := "never" | "maxversions=" N | "maxage=" DURATION | "(" expr ")"
// Rules and nesting are bounded (kMaxGcPolicyRules, kMaxGcPolicyNesting):
// the parser, ToString, Collects and the destructor all recurse over the
// tree, so an unbounded expression could overflow the stack.
class PolicyParser {
 public:
  explicit PolicyParser(std::string_view text) : text_(text) {}

  Result<GcPolicy> ParseAll() {
    TABLETFS_ASSIGN_OR_RETURN(GcPolicy p, ParseExpr());
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected '" + Rest() + "'");
    return p;
  }

 private:
  Result<GcPolicy> ParseExpr() {
    TABLETFS_ASSIGN_OR_RETURN(GcPolicy left, ParseTerm());
    while (ConsumeKeyword("or", "||")) {
      TABLETFS_ASSIGN_OR_RETURN(GcPolicy right, ParseTerm());
      left = GcPolicy::Or(std::move(left), std::move(right));
    }
    return left;
  }

  Result<GcPolicy> ParseTerm() {
    TABLETFS_ASSIGN_OR_RETURN(GcPolicy left, ParseFactor());
    while (ConsumeKeyword("and", "&&")) {
      TABLETFS_ASSIGN_OR_RETURN(GcPolicy right, ParseFactor());
      left = GcPolicy::And(std::move(left), std::move(right));
    }
    return left;
  }

  Result<GcPolicy> ParseFactor() {
    SkipSpace();
    if (pos_ == text_.size()) {
      return Error("expected never, maxversions=N, maxage=DURATION or '('");
    }
    if (text_[pos_] == '(') {
      if (depth_ == kMaxGcPolicyNesting) {
        return Error("parentheses nested deeper than " +
                     std::to_string(kMaxGcPolicyNesting));
      }
      ++pos_;
      ++depth_;
      TABLETFS_ASSIGN_OR_RETURN(GcPolicy inner, ParseExpr());
      --depth_;
      SkipSpace();
      if (pos_ == text_.size() || text_[pos_] != ')') {
        return Error("expected ')'");
      }
      ++pos_;
      return inner;
    }
    if (++rules_ > kMaxGcPolicyRules) {
      return Error("more than " + std::to_string(kMaxGcPolicyRules) + " rules");
    }
    std::string word = Word();
    std::string lower = Lower(word);
    if (lower == "never") return GcPolicy::Never();
    if (lower.rfind("maxversions=", 0) == 0) {
      std::string_view n = std::string_view(word).substr(12);
      uint64_t v = 0;
      if (n.empty()) return Error("maxversions needs a number");
      for (char c : n) {
        if (!std::isdigit(static_cast<unsigned char>(c)) ||
            v > (std::numeric_limits<uint64_t>::max() - 9) / 10) {
          return Error("maxversions wants a positive integer, not '" +
                       std::string(n) + "'");
        }
        v = v * 10 + static_cast<uint64_t>(c - '0');
      }
      if (v == 0) return Error("maxversions must be at least 1");
      return GcPolicy::MaxVersions(v);
    }
    if (lower.rfind("maxage=", 0) == 0) {
      Result<int64_t> d = ParseDurationMicros(std::string_view(word).substr(7));
      if (!d.ok()) return Error(d.status().message());
      return GcPolicy::MaxAge(*d);
    }
    if (word.empty()) return Error("unexpected '" + Rest() + "'");
    return Error("unknown rule '" + word +
                 "' (expected never, maxversions=N or maxage=DURATION)");
  }

  // The word `kw` or the operator `symbol` (cbt accepts both; the operator
  // needs no spaces around it: maxage=1d||maxversions=3).
  bool ConsumeKeyword(std::string_view kw, std::string_view symbol) {
    SkipSpace();
    if (text_.substr(pos_, symbol.size()) == symbol) {
      pos_ += symbol.size();
      return true;
    }
    size_t save = pos_;
    std::string w = Lower(Word());
    if (w == kw) return true;
    pos_ = save;
    return false;
  }

  std::string Word() {
    size_t start = pos_;
    while (pos_ < text_.size() &&
           !std::isspace(static_cast<unsigned char>(text_[pos_])) &&
           text_[pos_] != '(' && text_[pos_] != ')' && text_[pos_] != '|' &&
           text_[pos_] != '&') {
      ++pos_;
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  void SkipSpace() {
    while (pos_ < text_.size() &&
           std::isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
  }

  std::string Rest() const { return std::string(text_.substr(pos_)); }

  static std::string Lower(std::string s) {
    for (char &c : s)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }

  Status Error(const std::string &what) const {
    return Status::InvalidArgument("gc policy '" + std::string(text_) +
                                       "' at offset " + std::to_string(pos_),
                                   what);
  }

  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
  int rules_ = 0;
};

}  // namespace

GcPolicy GcPolicy::MaxVersions(uint64_t n) {
  GcPolicy p;
  p.kind_ = Kind::kMaxVersions;
  p.value_ = n;
  return p;
}

GcPolicy GcPolicy::MaxAge(int64_t micros) {
  GcPolicy p;
  p.kind_ = Kind::kMaxAge;
  p.value_ = static_cast<uint64_t>(micros);
  return p;
}

GcPolicy GcPolicy::And(GcPolicy a, GcPolicy b) {
  GcPolicy p;
  p.kind_ = Kind::kAnd;
  p.left_ = std::make_shared<const GcPolicy>(std::move(a));
  p.right_ = std::make_shared<const GcPolicy>(std::move(b));
  return p;
}

GcPolicy GcPolicy::Or(GcPolicy a, GcPolicy b) {
  GcPolicy p;
  p.kind_ = Kind::kOr;
  p.left_ = std::make_shared<const GcPolicy>(std::move(a));
  p.right_ = std::make_shared<const GcPolicy>(std::move(b));
  return p;
}

Result<GcPolicy> GcPolicy::Parse(std::string_view text) {
  return PolicyParser(text).ParseAll();
}

std::string GcPolicy::ToString() const {
  switch (kind_) {
    case Kind::kNever:
      return "never";
    case Kind::kMaxVersions:
      return "maxversions=" + std::to_string(value_);
    case Kind::kMaxAge:
      return "maxage=" + FormatDurationMicros(max_age_micros());
    case Kind::kAnd:
    case Kind::kOr: {
      // Parsing is left-associative and "and" binds tighter than "or", so
      // parenthesize a left child of lower precedence and a right child of
      // the same or lower precedence: Parse(ToString()) rebuilds this tree.
      auto wrap = [this](const GcPolicy &child, bool is_right) {
        bool combo = child.kind_ == Kind::kAnd || child.kind_ == Kind::kOr;
        bool parens = false;
        if (combo) {
          if (kind_ == Kind::kAnd) {
            parens = child.kind_ == Kind::kOr || is_right;
          } else {
            parens = is_right && child.kind_ == Kind::kOr;
          }
        }
        std::string s = child.ToString();
        return parens ? "(" + s + ")" : s;
      };
      return wrap(*left_, false) + (kind_ == Kind::kAnd ? " and " : " or ") +
             wrap(*right_, true);
    }
  }
  return "never";
}

bool GcPolicy::Collects(uint64_t rank, int64_t age_micros) const {
  switch (kind_) {
    case Kind::kNever:
      return false;
    case Kind::kMaxVersions:
      return rank >= value_;
    case Kind::kMaxAge:
      return age_micros > max_age_micros();
    case Kind::kAnd:
      return left_->Collects(rank, age_micros) &&
             right_->Collects(rank, age_micros);
    case Kind::kOr:
      return left_->Collects(rank, age_micros) ||
             right_->Collects(rank, age_micros);
  }
  return false;
}

bool GcPolicy::DependsOnTime() const {
  switch (kind_) {
    case Kind::kMaxAge:
      return true;
    case Kind::kAnd:
    case Kind::kOr:
      return left_->DependsOnTime() || right_->DependsOnTime();
    default:
      return false;
  }
}

bool GcPolicy::operator==(const GcPolicy &other) const {
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kNever:
      return true;
    case Kind::kMaxVersions:
    case Kind::kMaxAge:
      return value_ == other.value_;
    case Kind::kAnd:
    case Kind::kOr:
      return *left_ == *other.left_ && *right_ == *other.right_;
  }
  return false;
}

Result<int64_t> ParseDurationMicros(std::string_view text) {
  if (text.empty()) {
    return Status::InvalidArgument(
        "empty duration (expected e.g. 30s, 12h, 7d)");
  }
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    int64_t n = 0;
    while (i < text.size() &&
           std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (n > (std::numeric_limits<int64_t>::max() - 9) / 10) {
        return Status::InvalidArgument("duration '" + std::string(text) +
                                       "' is too large");
      }
      n = n * 10 + (text[i] - '0');
      ++i;
    }
    if (i == start) {
      return Status::InvalidArgument("duration '" + std::string(text) +
                                     "': expected a number at offset " +
                                     std::to_string(i));
    }
    const DurationUnit *unit = nullptr;
    for (const DurationUnit &u : kUnits) {
      if (text.substr(i, u.name.size()) == u.name) {
        unit = &u;
        break;
      }
    }
    if (unit == nullptr) {
      return Status::InvalidArgument("duration '" + std::string(text) +
                                     "': expected a unit (ms, s, m, "
                                     "h, d) at offset " +
                                     std::to_string(i));
    }
    i += unit->name.size();
    if (n > (std::numeric_limits<int64_t>::max() - total) / unit->micros) {
      return Status::InvalidArgument("duration '" + std::string(text) +
                                     "' is too large");
    }
    total += n * unit->micros;
  }
  if (total <= 0) {
    return Status::InvalidArgument("duration '" + std::string(text) +
                                   "' must be positive");
  }
  return total;
}

std::string FormatDurationMicros(int64_t micros) {
  if (micros <= 0) return "0s";
  std::string out;
  static constexpr DurationUnit kOrder[] = {
      {"d", 86400LL * 1000 * 1000},
      {"h", 3600LL * 1000 * 1000},
      {"m", 60LL * 1000 * 1000},
      {"s", 1000 * 1000},
      {"ms", 1000},
      {"us", 1},
  };
  for (const DurationUnit &u : kOrder) {
    if (micros >= u.micros) {
      out += std::to_string(micros / u.micros);
      out += u.name;
      micros %= u.micros;
    }
  }
  return out;
}

Status ValidateTableName(std::string_view name) {
  return ValidateName("table", name, 50);
}

Status ValidateFamilyName(std::string_view name) {
  return ValidateName("family", name, 64);
}

Status ValidateRowKey(std::string_view row) {
  if (row.empty()) return Status::InvalidArgument("row key is empty");
  if (row.size() > kMaxRowKeyBytes) {
    return Status::InvalidArgument("row key of " + std::to_string(row.size()) +
                                   " bytes is longer than the limit of 65536");
  }
  return Status::OK();
}

}  // namespace tabletfs
