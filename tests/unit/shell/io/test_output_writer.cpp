// OutputWriter: forwarding never blocks; a stalled reader costs dropped lines, counted
// and reported once by a notice when the stream moves again.

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

#include "daemon/shell/io/output_writer.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

struct SmallPipe {
    int read_fd = -1;
    int write_fd = -1;
    SmallPipe() {
        int fds[2];
        REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
        read_fd = fds[0];
        write_fd = fds[1];
        fcntl(write_fd, F_SETPIPE_SZ, 4096);
        fcntl(read_fd, F_SETFL, O_NONBLOCK);
    }
    ~SmallPipe() {
        close(read_fd);
        close(write_fd);
    }
    // Appends whatever is readable now to `into`.
    void drain(std::string& into) const {
        char buffer[8192];
        ssize_t n;
        while ((n = read(read_fd, buffer, sizeof buffer)) > 0) {
            into.append(buffer, static_cast<std::size_t>(n));
        }
    }
};

std::string numbered(int i) {
    std::string line = "line " + std::to_string(i) + " ";
    line.resize(99, '.');
    return line;
}

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream stream(text);
    std::string line;
    while (std::getline(stream, line)) {
        lines.push_back(line);
    }
    return lines;
}

}  // namespace

TEST_CASE("a stalled pipe: lines queue up to the bound, then drop; one notice when it resumes") {
    TestLoop loop;
    SmallPipe pipe;
    constexpr int k_lines = 1000;  // 100 KB against a 4 KiB pipe and a 16 KiB backlog
    {
        OutputWriter writer(loop.get(), pipe.write_fd, 16 * 1024);
        CHECK(!writer.direct());
        for (int i = 0; i < k_lines; ++i) {
            writer.write_line(numbered(i));
        }
        CHECK(writer.queued_bytes() <= 16 * 1024);
        CHECK(writer.queued_bytes() > 0);
        std::uint64_t dropped = writer.dropped_lines();
        CHECK(dropped > 0);
        CHECK(writer.unreported_drops() == dropped);

        // The reader comes back: everything queued arrives, then the notice.
        std::string received;
        const std::string notice =
            "pkitd: dropped " + std::to_string(dropped) + " lines of forwarded output\n";
        REQUIRE(loop.run_until([&] {
            pipe.drain(received);
            return received.ends_with(notice);
        }));
        CHECK(writer.notices_written() == 1);
        CHECK(writer.unreported_drops() == 0);
        CHECK(writer.queued_bytes() == 0);
        writer.write_line("after");
        REQUIRE(loop.run_until([&] {
            pipe.drain(received);
            return received.ends_with("after\n");
        }));

        auto lines = split_lines(received);
        auto kept = static_cast<int>(lines.size()) - 2;
        REQUIRE(kept > 0);
        CHECK(kept + static_cast<int>(dropped) == k_lines);
        for (int i = 0; i < kept; ++i) {
            REQUIRE(lines[static_cast<std::size_t>(i)] == numbered(i));
        }
        CHECK(lines[static_cast<std::size_t>(kept)] + "\n" == notice);
        CHECK(lines.back() == "after");
    }
    // The fd is blocking again, as whoever gave it to pkitd left it.
    CHECK((fcntl(pipe.write_fd, F_GETFL) & O_NONBLOCK) == 0);
    CHECK(loop.close() == 0);
}

TEST_CASE("flush_blocking waits, within its limit, for a slow reader to take the queue") {
    TestLoop loop;
    SmallPipe pipe;
    {
        OutputWriter writer(loop.get(), pipe.write_fd, 64 * 1024);
        for (int i = 0; i < 200; ++i) {
            writer.write_line(numbered(i));
        }
        REQUIRE(writer.queued_bytes() > 0);
        CHECK(!writer.flush_blocking(20ms));  // nobody reads: gives up at the limit
        std::string received;
        std::thread reader([&] {
            auto deadline = std::chrono::steady_clock::now() + 10s;
            while (received.size() < 200 * 100 && std::chrono::steady_clock::now() < deadline) {
                pipe.drain(received);
                std::this_thread::yield();
            }
        });
        CHECK(writer.flush_blocking(10s));
        reader.join();
        CHECK(split_lines(received).size() == 200);
        CHECK(writer.dropped_lines() == 0);
    }
    CHECK(loop.close() == 0);
}

namespace {

// A regular file in a temp dir, open for writing, as pkitd's stdout redirected to a file.
struct LogFile {
    TempDir dir;
    std::string path = dir.path() + "/out.log";
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ~LogFile() { close(fd); }
    std::string text() const {
        std::ifstream file(path);
        std::stringstream content;
        content << file.rdbuf();
        return content.str();
    }
};

}  // namespace

TEST_CASE("a regular file is written directly") {
    TestLoop loop;
    LogFile log;
    REQUIRE(log.fd >= 0);
    {
        OutputWriter writer(loop.get(), log.fd);
        CHECK(writer.direct());
        SUBCASE("write_line: at once") {
            writer.write_line("one");
            writer.write_line("two");
            CHECK(writer.queued_bytes() == 0);
            CHECK(log.text() == "one\ntwo\n");
        }
        SUBCASE("batch_line: by the turn's end, or flush_blocking") {
            writer.batch_line({"a", " | ", "one"});
            REQUIRE(loop.run_until([&] { return writer.queued_bytes() == 0; }));
            CHECK(log.text() == "a | one\n");
            writer.batch_line({"a", " | ", "two"});
            CHECK(writer.flush_blocking());
            CHECK(log.text() == "a | one\na | two\n");
        }
        SUBCASE("write_line after batch_line: the batch first, then the line, at once") {
            writer.batch_line({"pkitd: ", "svc stopped"});
            CHECK(log.text().empty());  // not yet: at the turn's end
            writer.write_line("pkitd: error: something");
            CHECK(writer.queued_bytes() == 0);
            CHECK(log.text() == "pkitd: svc stopped\npkitd: error: something\n");
        }
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("batched lines are written at the turn's end or per 64 KiB, whole and in order") {
    TestLoop loop;
    int fds[2];
    REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
    fcntl(fds[1], F_SETPIPE_SZ, 1024 * 1024);
    constexpr int k_lines = 20000;  // about 400 KB: several batches
    std::string expected;
    {
        OutputWriter writer(loop.get(), fds[1]);
        writer.batch_line({"svc", " | ", "first"});
        CHECK(writer.queued_bytes() == std::string("svc | first\n").size());  // not yet
        writer.write_line("pkitd: an event");  // joins the batch, after it, and goes now
        CHECK(writer.queued_bytes() == 0);
        expected = "svc | first\npkitd: an event\n";
        for (int i = 0; i < k_lines; ++i) {
            std::string text = numbered(i).substr(0, 12);
            writer.batch_line({"svc", " | ", text});
            expected += "svc | " + text + "\n";
            CHECK(writer.queued_bytes() < 64 * 1024 + 64);  // written per 64 KiB
        }
        writer.batch_line({"raw"});
        expected += "raw\n";
        REQUIRE(loop.run_until([&] { return writer.queued_bytes() == 0; }));
        CHECK(writer.dropped_lines() == 0);
    }
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    std::string received;
    char buffer[65536];
    ssize_t n;
    while ((n = read(fds[0], buffer, sizeof buffer)) > 0) {
        received.append(buffer, static_cast<std::size_t>(n));
    }
    CHECK(received == expected);
    close(fds[0]);
    close(fds[1]);
    CHECK(loop.close() == 0);
}

TEST_CASE("batched lines to a stalled pipe queue to the bound, then drop, with one notice") {
    TestLoop loop;
    SmallPipe pipe;
    constexpr int k_lines = 1000;
    {
        OutputWriter writer(loop.get(), pipe.write_fd, 16 * 1024);
        for (int i = 0; i < k_lines; ++i) {
            writer.batch_line({numbered(i)});
        }
        CHECK(writer.queued_bytes() <= 16 * 1024);
        std::uint64_t dropped = writer.dropped_lines();
        CHECK(dropped > 0);
        std::string received;
        const std::string notice =
            "pkitd: dropped " + std::to_string(dropped) + " lines of forwarded output\n";
        REQUIRE(loop.run_until([&] {
            pipe.drain(received);
            return received.ends_with(notice);
        }));
        auto lines = split_lines(received);
        auto kept = static_cast<int>(lines.size()) - 1;
        CHECK(kept + static_cast<int>(dropped) == k_lines);
        for (int i = 0; i < kept; ++i) {
            REQUIRE(lines[static_cast<std::size_t>(i)] == numbered(i));
        }
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a pipe whose reader is gone drops lines without a notice") {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    struct sigaction saved {};
    sigaction(SIGPIPE, &ignore, &saved);  // as pkitd does
    TestLoop loop;
    {
        SmallPipe pipe;
        close(pipe.read_fd);
        pipe.read_fd = -1;
        OutputWriter writer(loop.get(), pipe.write_fd);
        writer.write_line("lost");
        writer.write_line("lost too");
        CHECK(writer.dropped_lines() == 2);
        CHECK(writer.unreported_drops() == 0);
        CHECK(writer.queued_bytes() == 0);
    }
    {
        // The reader vanishes while lines are queued and some were already dropped.
        SmallPipe pipe;
        OutputWriter writer(loop.get(), pipe.write_fd, 8 * 1024);
        for (int i = 0; i < 200; ++i) {
            writer.write_line(numbered(i));
        }
        auto dropped = writer.dropped_lines();
        REQUIRE(dropped > 0);
        close(pipe.read_fd);
        pipe.read_fd = -1;
        CHECK(loop.run_until([&] { return writer.queued_bytes() == 0; }));
        CHECK(writer.dropped_lines() == dropped);
        CHECK(writer.notices_written() == 0);
        writer.write_line("lost");
        CHECK(writer.dropped_lines() == dropped + 1);
    }
    CHECK(loop.close() == 0);
    sigaction(SIGPIPE, &saved, nullptr);
}

}  // namespace pkit::shell::test
