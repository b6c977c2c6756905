// The client's line reader: lines split and joined across reads, a reply larger than
// one read, the bytes after a line kept for the next call, end of stream and the bound.

#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "tests/unit/proto/proto_doctest.hpp"

#include "proto/line_client.hpp"

using namespace pkit::proto;

namespace {

// A connected pair: the test writes to `writer` and reads lines from `reader`.
struct SocketPair {
    SocketPair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0); }
    ~SocketPair() {
        close_writer();
        ::close(fds[0]);
    }
    SocketPair(const SocketPair&) = delete;
    SocketPair& operator=(const SocketPair&) = delete;

    void write(const std::string& bytes) const { REQUIRE(send_all(fds[1], bytes).has_value()); }
    void close_writer() {
        if (fds[1] >= 0) {
            ::close(fds[1]);
            fds[1] = -1;
        }
    }
    int reader() const { return fds[0]; }

    int fds[2] = {-1, -1};
};

std::string next_line(const SocketPair& pair, std::string& buffer) {
    LineResult read = read_line(pair.reader(), buffer, std::nullopt);
    REQUIRE(read.status == LineRead::line);
    return read.text;
}

}  // namespace

TEST_CASE("read_line: lines split across reads come whole, and bytes after a line wait") {
    SocketPair pair;
    std::string buffer;
    pair.write("first\nsec");
    CHECK(next_line(pair, buffer) == "first");
    CHECK(buffer == "sec");  // the start of the next line stays for the next call
    pair.write("ond\nthird\n");
    CHECK(next_line(pair, buffer) == "second");
    CHECK(next_line(pair, buffer) == "third");
    CHECK(buffer.empty());
    pair.write("\n");
    CHECK(next_line(pair, buffer).empty());
    pair.write("last, without its newline");
    pair.close_writer();
    CHECK(read_line(pair.reader(), buffer, std::nullopt).status == LineRead::eof);
}

TEST_CASE("read_line: a line longer than one read is returned whole and the buffer reused") {
    // A status reply of 1,000 services is ~130 KB: several receives of 64 KiB.
    std::string big(300'000, 'x');
    for (std::size_t i = 0; i < big.size(); i += 997) {
        big[i] = static_cast<char>('a' + i % 26);
    }
    SocketPair pair;
    std::string buffer;
    bool sent = false;  // more than the socket holds: written while the test reads
    std::thread writer([&] { sent = send_all(pair.fds[1], big + "\nafter\n").has_value(); });
    LineResult read = read_line(pair.reader(), buffer, std::nullopt);
    writer.join();
    CHECK(sent);
    REQUIRE(read.status == LineRead::line);
    const std::string& line = read.text;
    CHECK(line.size() == big.size());
    CHECK(line == big);
    CHECK(next_line(pair, buffer) == "after");
    CHECK(buffer.empty());
    // The buffer, moved out with a line that was all of it, still reads the next one.
    pair.write("again\n");
    CHECK(next_line(pair, buffer) == "again");
}

TEST_CASE("read_line: more than the bound without a newline is too large, not a line") {
    SocketPair pair;
    std::string buffer;
    pair.write(std::string(5000, 'y'));
    LineResult read = read_line(pair.reader(), buffer, std::nullopt, nullptr, 4096);
    CHECK(read.status == LineRead::too_large);
}
