#pragma once
// std::cin, std::cout, std::cerr and std::clog declared as <iostream> declares them, but
// without constructing them at start-up (issue 14). With libstdc++ before GCC 13,
// every file that includes <iostream> constructs the eight standard streams and the
// classic locale before main, ~44,000 instructions and 3-4 page faults, which a
// status call of one service (ctl/status_args.hpp) never needs. So pkitctl's files
// include this header instead, and main constructs a std::ios_base::Init before any
// other command runs (CLI11's <iostream> included after this one declares nothing
// more). Elsewhere (GCC 13 and later construct them in the library; libc++), this is
// <iostream> itself. Code on the status path writes through <cstdio> instead, which is
// where std::cout writes too (synced with stdio, the default).

#include <istream>
#include <ostream>

#if defined(_GLIBCXX_RELEASE) && _GLIBCXX_RELEASE < 13 && !defined(_GLIBCXX_IOSTREAM)
#define _GLIBCXX_IOSTREAM 1
namespace std _GLIBCXX_VISIBILITY(default) {
_GLIBCXX_BEGIN_NAMESPACE_VERSION
extern istream cin;
extern ostream cout;
extern ostream cerr;
extern ostream clog;
#ifdef _GLIBCXX_USE_WCHAR_T
extern wistream wcin;
extern wostream wcout;
extern wostream wcerr;
extern wostream wclog;
#endif
_GLIBCXX_END_NAMESPACE_VERSION
}  // namespace std
#else
#include <iostream>
#endif
