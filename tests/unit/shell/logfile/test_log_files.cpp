// LogFiles (SPEC §18): lines from the loop reach the file through the writer thread;
// a stalled disk never blocks append(), and what it costs is counted exactly.

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "daemon/shell/logfile/log_files.hpp"
#include "daemon/shell/logfile/log_read.hpp"
#include "tests/unit/shell/logfile/logfile_test.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {
namespace {

// A disk whose writes wait until released: a stalled disk.
class StalledDisk final : public LogDisk {
public:
    void release() {
        std::lock_guard lock(m_mutex);
        m_stalled = false;
        m_release.notify_all();
    }
    std::atomic<int> waiting{0};

    int open_append(const std::string& path, int& fd, std::uint64_t& size) override {
        return m_real.open_append(path, fd, size);
    }
    int write(int fd, std::string_view data, std::size_t& written) override {
        std::unique_lock lock(m_mutex);
        ++waiting;
        m_release.wait(lock, [&] { return !m_stalled; });
        return m_real.write(fd, data, written);
    }
    int read_at(int fd, std::uint64_t offset, std::size_t length, std::string& out) override {
        return m_real.read_at(fd, offset, length, out);
    }
    int truncate(int fd, std::uint64_t size) override { return m_real.truncate(fd, size); }
    int rename(const std::string& from, const std::string& to) override {
        return m_real.rename(from, to);
    }
    int remove(const std::string& path) override { return m_real.remove(path); }
    void close(int fd) override { m_real.close(fd); }

private:
    PosixLogDisk m_real;
    std::mutex m_mutex;
    std::condition_variable m_release;
    bool m_stalled = true;
};

}  // namespace

TEST_CASE("lines appended on the loop reach the file, in order, in the file's format") {
    TestLoop loop;
    TempDir dir;
    {
        LogFiles files(loop.get(), nullptr);
        std::string path = dir.path() + "/web.log";
        auto id = files.add(
            "web",
            config::LogFileSpec{
                .path = path, .max_size = 1 << 20, .keep = 2, .format = config::LogFormat::text});
        files.append(id, core::Stream::stdout_, 1796418883.123, 1, "hello");
        files.append(id, core::Stream::stderr_, 1796418884.5, 1, "oops");
        CHECK(
            loop.run_until([&] { return files.stats(id).bytes > 0 && files.queued_bytes() == 0; }));
        CHECK(files.flush(std::chrono::seconds(5)));
        CHECK(file_lines(path) == std::vector<std::string>{"2026-12-04T21:14:43.123Z out hello",
                                                           "2026-12-04T21:14:44.500Z err oops"});
        CHECK(files.stats(id).size == file_text(path).size());
        files.rotate(id);
        CHECK(files.flush(std::chrono::seconds(5)));
        CHECK(files.stats(id).rotations == 1);
        CHECK(file_lines(path + ".1").size() == 2);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE(
    "a stalled disk: append never blocks, the queue's bound drops lines, counted exactly, "
    "reported once, and the notice lands first when the disk moves") {
    TestLoop loop;
    TempDir dir;
    auto disk = std::make_shared<StalledDisk>();
    std::vector<LogFiles::Report> reports;
    {
        LogFiles files(
            loop.get(), [&](const LogFiles::Report& r) { reports.push_back(r); }, disk);
        std::string path = dir.path() + "/web.log";
        auto id = files.add(
            "web",
            config::LogFileSpec{
                .path = path, .max_size = 1 << 30, .keep = 1, .format = config::LogFormat::raw});
        std::string line(100, 'x');
        // A first line puts the writer into the stalled write.
        files.append(id, core::Stream::stdout_, 0, 1, line);
        CHECK(loop.run_until([&] { return disk->waiting.load() > 0; }));
        // 124 bytes a queued line: 1 MiB holds 8456; the rest are dropped at once. The
        // disk stays stalled until the end: an append that waited for it would never
        // return (the test would time out), so reaching the checks is the proof.
        for (int i = 0; i < 20000; ++i) {
            files.append(id, core::Stream::stdout_, 0, 1, line);
        }
        std::uint64_t queued = LogFiles::k_file_queue / (24 + line.size());
        CHECK(files.queued_bytes() == queued * (24 + line.size()));
        CHECK(files.stats(id).dropped == 20000 - queued);
        CHECK(loop.run_until([&] { return !reports.empty(); }));
        REQUIRE(reports.size() == 1);
        CHECK(reports[0].kind == LogFiles::Report::Kind::queue_full);
        CHECK(reports[0].text() == "web: log file " + path +
                                       ": the writer is behind (a slow or stalled disk); lines are "
                                       "dropped");
        disk->release();
        // Until the writer has taken the queue, every line is dropped (one gap).
        CHECK(loop.run_until([&] { return files.queued_bytes() == 0; }));
        files.append(id, core::Stream::stdout_, 0, 1, "after");
        CHECK(loop.run_until([&] { return reports.size() == 2; }));
        CHECK(files.flush(std::chrono::seconds(10)));
        CHECK(reports[1].kind == LogFiles::Report::Kind::recovered);
        CHECK(reports[1].dropped == 20000 - queued);
        auto lines = file_lines(path);
        REQUIRE(lines.size() == 1 + queued + 2);
        CHECK(lines[queued + 1] == "pkitd: " + std::to_string(20000 - queued) + " lines dropped");
        CHECK(lines.back() == "after");
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("reading back: the newest N lines through the file and its rotated files, oldest first") {
    TempDir dir;
    std::string path = dir.path() + "/web.log";
    config::LogFileSpec spec{
        .path = path, .max_size = 1 << 20, .keep = 3, .format = config::LogFormat::text};
    dir.write("web.log.3", "2026-12-04T21:00:00.000Z out one\n");
    dir.write("web.log.2",
              "2026-12-04T21:00:01.000Z out two\n2026-12-04T21:00:02.000Z err three\n");
    // web.log.1 missing (no error); web.log ends in a torn line, which is left out.
    dir.write("web.log",
              "2026-12-04T21:00:03.000Z out four\nnot a log line\n"
              "2026-12-04T21:00:04.000Z out five\n2026-12-04T21:00:05.0");
    auto texts = [](const std::vector<ParsedLine>& lines) {
        std::vector<std::string> out;
        for (const auto& line : lines) {
            out.push_back(line.text);
        }
        return out;
    };
    auto all = read_back(
        spec, ReadBackQuery{.max_lines = 100, .since = std::nullopt, .before = std::nullopt});
    REQUIRE(all);
    CHECK(texts(*all) == std::vector<std::string>{"one", "two", "three", "four", "five"});
    CHECK((*all)[2].stream == core::Stream::stderr_);
    auto last3 = read_back(
        spec, ReadBackQuery{.max_lines = 3, .since = std::nullopt, .before = std::nullopt});
    CHECK(texts(*last3) == std::vector<std::string>{"three", "four", "five"});
    auto window =
        read_back(spec, ReadBackQuery{.max_lines = 100,
                                      .since = parse_rfc3339_ms("2026-12-04T21:00:01.000Z"),
                                      .before = parse_rfc3339_ms("2026-12-04T21:00:04.000Z")});
    CHECK(texts(*window) == std::vector<std::string>{"two", "three", "four"});
    spec.format = config::LogFormat::raw;
    CHECK_FALSE(read_back(spec, ReadBackQuery{}));
}

TEST_CASE("reading back a file larger than one block finds every line") {
    TempDir dir;
    std::string text;
    for (int i = 0; i < 20000; ++i) {
        append_log_line(text, config::LogFormat::text, "web",
                        LogRecord{.stream = core::Stream::stdout_,
                                  .at = 1e9 + i,
                                  .run = 1,
                                  .text = "line " + std::to_string(i)});
    }
    std::string path = dir.write("web.log", text);
    auto lines = read_back(
        config::LogFileSpec{
            .path = path, .max_size = 1 << 30, .keep = 0, .format = config::LogFormat::text},
        ReadBackQuery{.max_lines = 20000, .since = std::nullopt, .before = std::nullopt});
    REQUIRE(lines);
    REQUIRE(lines->size() == 20000);
    for (int i = 0; i < 20000; i += 997) {
        CHECK((*lines)[static_cast<std::size_t>(i)].text == "line " + std::to_string(i));
    }
}

}  // namespace pkit::shell::test
