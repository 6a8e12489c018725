// GCC 12 reports -Wrestrict inside std::string where a test builds a string
// from a literal and a temporary ("v" + std::to_string(i)) and inlines it:
// a false positive (GCC bug 105329, fixed in GCC 13). The warning is
// switched off at those lines only, each marked with a comment:
//
//   // GCC bug 105329: a false -Wrestrict in "v" + std::to_string(i).
//   TABLETFS_GCC_BUG_105329_BEGIN
//   ... the line ...
//   TABLETFS_GCC_BUG_105329_END
//
// Nothing else is silenced, so a real -Wrestrict anywhere else still shows.
// Clang has no -Wrestrict (and treats an unknown group in a pragma as an
// error under -Werror): there the macros are empty.
#ifndef TABLETFS_TESTS_UTIL_GCC_BUG_105329_H_
#define TABLETFS_TESTS_UTIL_GCC_BUG_105329_H_

#if defined(__GNUC__) && !defined(__clang__)
#define TABLETFS_GCC_BUG_105329_BEGIN \
  _Pragma("GCC diagnostic push")      \
      _Pragma("GCC diagnostic ignored \"-Wrestrict\"")
#define TABLETFS_GCC_BUG_105329_END _Pragma("GCC diagnostic pop")
#else
#define TABLETFS_GCC_BUG_105329_BEGIN
#define TABLETFS_GCC_BUG_105329_END
#endif

#endif  // TABLETFS_TESTS_UTIL_GCC_BUG_105329_H_
