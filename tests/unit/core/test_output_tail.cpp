// The bounded tail of one run (SPEC §4): max_lines, max_bytes, oldest dropped.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "daemon/core/output_tail.hpp"

namespace pkit::core {
namespace {

std::vector<std::string> lines(const OutputTail& tail) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < tail.size(); ++i) {
        out.push_back(tail.at(i).text);
    }
    return out;
}

using Lines = std::vector<std::string>;

TEST_CASE("output tail within its bounds keeps everything, not truncated") {
    OutputTail tail(3, 100);
    tail.append(Stream::stdout_, "one", 1.0);
    tail.append(Stream::stderr_, "two", 2.0);
    CHECK(lines(tail) == Lines{"one", "two"});
    CHECK_FALSE(tail.truncated());
    CHECK(tail.bytes() == 6);
    CHECK(tail.at(1).stream == Stream::stderr_);
    CHECK(tail.at(1).at == 2.0);
}

TEST_CASE("output tail keeps at most max_lines, dropping the oldest") {
    OutputTail tail(3, 1000);
    for (int i = 1; i <= 5; ++i) {
        tail.append(Stream::stdout_, "line " + std::to_string(i), i);
    }
    CHECK(lines(tail) == Lines{"line 3", "line 4", "line 5"});
    CHECK(tail.truncated());
    CHECK(tail.bytes() == 18);
}

TEST_CASE("output tail keeps at most max_bytes of line text, dropping the oldest") {
    OutputTail tail(100, 10);
    tail.append(Stream::stdout_, "aaaa", 1.0);
    tail.append(Stream::stdout_, "bbbb", 2.0);
    CHECK_FALSE(tail.truncated());
    tail.append(Stream::stdout_, "cc", 3.0);  // exactly 10 bytes: still fits
    CHECK(lines(tail) == Lines{"aaaa", "bbbb", "cc"});
    CHECK_FALSE(tail.truncated());
    tail.append(Stream::stdout_, "d", 4.0);
    CHECK(lines(tail) == Lines{"bbbb", "cc", "d"});
    CHECK(tail.bytes() == 7);
    CHECK(tail.truncated());
}

TEST_CASE("a single line larger than max_bytes keeps its end") {
    OutputTail tail(100, 10);
    tail.append(Stream::stdout_, "old", 1.0);
    tail.append(Stream::stderr_, "0123456789ABCDEF", 2.0);
    CHECK(lines(tail) == Lines{"6789ABCDEF"});
    CHECK(tail.bytes() == 10);
    CHECK(tail.truncated());
    CHECK(tail.at(0).stream == Stream::stderr_);
}

TEST_CASE("output tail keeps line order across ring wrap-around and growth") {
    // Five-byte lines wrap the ring under the byte bound; one-byte lines then let it
    // grow past its first capacity while the head is in the middle.
    OutputTail tail(100, 16);
    for (int i = 0; i < 9; ++i) {
        tail.append(Stream::stdout_, "long" + std::to_string(i), i);
    }
    CHECK(lines(tail) == Lines{"long6", "long7", "long8"});
    Lines expected;
    for (int i = 0; i < 20; ++i) {
        std::string text(1, static_cast<char>('a' + i));
        tail.append(Stream::stdout_, text, 100.0 + i);
        expected.push_back(text);
    }
    expected.erase(expected.begin(), expected.end() - 16);
    CHECK(lines(tail) == expected);
    CHECK(tail.bytes() == 16);
}

TEST_CASE("empty lines count against max_lines") {
    OutputTail tail(2, 10);
    tail.append(Stream::stdout_, "", 1.0);
    tail.append(Stream::stdout_, "", 2.0);
    tail.append(Stream::stdout_, "x", 3.0);
    CHECK(lines(tail) == Lines{"", "x"});
    CHECK(tail.truncated());
}

TEST_CASE("an output tail with zero bounds keeps nothing and says it dropped lines") {
    OutputTail no_lines(0, 100);
    no_lines.append(Stream::stdout_, "x", 1.0);
    CHECK(no_lines.empty());
    CHECK(no_lines.truncated());
    OutputTail no_bytes(10, 0);
    no_bytes.append(Stream::stdout_, "x", 1.0);
    CHECK(no_bytes.empty());
    CHECK(no_bytes.truncated());
}

TEST_CASE("clearing an output tail forgets lines and the truncated flag") {
    OutputTail tail(1, 100);
    tail.append(Stream::stdout_, "a", 1.0);
    tail.append(Stream::stdout_, "b", 2.0);
    REQUIRE(tail.truncated());
    tail.clear();
    CHECK(tail.empty());
    CHECK(tail.bytes() == 0);
    CHECK_FALSE(tail.truncated());
    tail.append(Stream::stdout_, "c", 3.0);
    CHECK(lines(tail) == Lines{"c"});
}

}  // namespace
}  // namespace pkit::core
