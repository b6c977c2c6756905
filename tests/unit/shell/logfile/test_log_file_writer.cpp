// LogFileWriter (SPEC §18): whole lines, rotation, and failure episodes, against a real
// directory, a faulty disk, a full tmpfs and a read-only bind mount.

#include <sys/mount.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <set>

#include "daemon/shell/logfile/log_file_writer.hpp"
#include "tests/unit/shell/logfile/logfile_test.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {
namespace {

using Clock = LogFileWriter::Clock;

config::LogFileSpec raw_spec(const std::string& path, std::uint64_t max_size, int keep) {
    return config::LogFileSpec{
        .path = path, .max_size = max_size, .keep = keep, .format = config::LogFormat::raw};
}

// Lines "line 0000" ... as records; the texts live in `texts`.
std::vector<LogRecord> numbered(std::vector<std::string>& texts, int from, int count) {
    texts.clear();
    for (int i = from; i < from + count; ++i) {
        char text[32];
        std::snprintf(text, sizeof text, "line %04d", i);
        texts.emplace_back(text);
    }
    std::vector<LogRecord> records;
    for (const std::string& text : texts) {
        records.push_back(
            LogRecord{.stream = core::Stream::stdout_, .at = 0, .run = 1, .text = text});
    }
    return records;
}

}  // namespace

TEST_CASE("rotation by size keeps every line once, whole, in order, in at most keep files") {
    TempDir dir;
    PosixLogDisk disk;
    std::string path = dir.path() + "/logs/web.log";  // the directory is made
    LogFileWriter writer(disk, raw_spec(path, 100, 3), "web");
    std::vector<std::string> texts;
    auto now = Clock::now();
    std::uint64_t rotations = 0;
    for (int batch = 0; batch < 10; ++batch) {
        auto out = writer.write(numbered(texts, batch * 7, 7), now, 0.0);
        CHECK(out.lines == 7);
        CHECK(out.dropped == 0);
        rotations += out.rotations;
    }
    // 70 lines of 10 bytes, 10 to a 100-byte file: 7 files, 6 rotations, 4 kept.
    CHECK(rotations == 6);
    CHECK_FALSE(std::filesystem::exists(path + ".4"));
    std::vector<std::string> all;
    for (std::string name : {path + ".3", path + ".2", path + ".1", path}) {
        auto lines = file_lines(name);
        CHECK(std::filesystem::file_size(name) <= 100);
        CHECK(file_text(name).back() == '\n');
        all.insert(all.end(), lines.begin(), lines.end());
    }
    REQUIRE(all.size() == 40);
    for (int i = 0; i < 40; ++i) {
        char text[32];
        std::snprintf(text, sizeof text, "line %04d", 30 + i);
        CHECK(all[static_cast<std::size_t>(i)] == text);
    }
}

TEST_CASE("file_keep = 0 removes the old file; a line over the size gets a file alone") {
    TempDir dir;
    PosixLogDisk disk;
    std::string path = dir.path() + "/web.log";
    LogFileWriter writer(disk, raw_spec(path, 30, 0), "web");
    std::vector<std::string> texts;
    auto out = writer.write(numbered(texts, 0, 5), Clock::now(), 0.0);
    CHECK(out.rotations == 1);
    CHECK(file_lines(path) == std::vector<std::string>{"line 0003", "line 0004"});
    CHECK_FALSE(std::filesystem::exists(path + ".1"));
    std::string big(100, 'x');
    std::vector<LogRecord> one{
        LogRecord{.stream = core::Stream::stdout_, .at = 0, .run = 1, .text = big}};
    out = writer.write(one, Clock::now(), 0.0);
    CHECK(out.lines == 1);
    CHECK(file_lines(path) == std::vector<std::string>{big});
}

TEST_CASE("rotate() rotates now, but never an empty file; reopen() follows a moved file") {
    TempDir dir;
    PosixLogDisk disk;
    std::string path = dir.path() + "/web.log";
    LogFileWriter writer(disk, raw_spec(path, 1 << 20, 2), "web");
    auto now = Clock::now();
    CHECK(writer.rotate(now).rotations == 0);  // nothing written yet
    std::vector<std::string> texts;
    (void)writer.write(numbered(texts, 0, 2), now, 0.0);
    CHECK(writer.rotate(now).rotations == 1);
    CHECK(writer.rotate(now).rotations == 0);  // the new file is empty
    CHECK(file_lines(path + ".1") == std::vector<std::string>{"line 0000", "line 0001"});
    // An external logrotate moves the file; until reopen() lines follow it.
    std::filesystem::rename(path, dir.path() + "/moved.log");
    (void)writer.write(numbered(texts, 2, 1), now, 0.0);
    writer.reopen();
    (void)writer.write(numbered(texts, 3, 1), now, 0.0);
    CHECK(file_lines(dir.path() + "/moved.log") == std::vector<std::string>{"line 0002"});
    CHECK(file_lines(path) == std::vector<std::string>{"line 0003"});
}

TEST_CASE(
    "a file left with a torn last line (pkitd killed in a write) is cut back to whole lines") {
    TempDir dir;
    PosixLogDisk disk;
    std::string path = dir.write("web.log", "whole one\nwhole two\nhalf a li");
    LogFileWriter writer(disk, raw_spec(path, 1 << 20, 2), "web");
    std::vector<std::string> texts;
    (void)writer.write(numbered(texts, 0, 1), Clock::now(), 0.0);
    CHECK(file_text(path) == "whole one\nwhole two\nline 0000\n");
}

TEST_CASE(
    "a disk that fills mid-write: whole lines only, an exact drop count, one report, "
    "a retry after a second, and the notice first") {
    TempDir dir;
    FaultyDisk disk;
    std::string path = dir.path() + "/web.log";
    LogFileWriter writer(disk, raw_spec(path, 1 << 20, 2), "web");
    std::vector<std::string> texts;
    auto now = Clock::now();
    disk.write_room = 25;  // two lines and half of a third
    auto out = writer.write(numbered(texts, 0, 5), now, 0.0);
    CHECK(out.lines == 2);
    CHECK(out.dropped == 3);
    CHECK(out.failed == ENOSPC);
    CHECK(file_text(path) == "line 0000\nline 0001\n");
    // Still full, within the second: dropped, no new episode, no try at all.
    int opens = disk.opens;
    out = writer.write(numbered(texts, 5, 2), now + std::chrono::milliseconds(500), 0.0);
    CHECK(out.dropped == 2);
    CHECK(out.failed == 0);
    CHECK(disk.opens == opens);
    // Still full after the second: tried, same episode, not reported again.
    out = writer.write(numbered(texts, 7, 1), now + std::chrono::milliseconds(1100), 0.0);
    CHECK(out.dropped == 1);
    CHECK(out.failed == 0);
    CHECK(disk.opens == opens + 1);
    CHECK(writer.unreported() == 6);
    // Room again: the notice, then the line.
    disk.write_room = SIZE_MAX;
    out = writer.write(numbered(texts, 8, 1), now + std::chrono::milliseconds(2200), 0.0);
    CHECK(out.recovered_episode);
    CHECK(out.recovered == 6);
    CHECK(out.lines == 1);
    CHECK(file_lines(path) == std::vector<std::string>{"line 0000", "line 0001",
                                                       "pkitd: 6 lines dropped", "line 0008"});
}

TEST_CASE("permission denied, and a failing rotation, are episodes like a full disk") {
    TempDir dir;
    FaultyDisk disk;
    std::string path = dir.path() + "/web.log";
    LogFileWriter writer(disk, raw_spec(path, 45, 2), "web");
    std::vector<std::string> texts;
    auto now = Clock::now();
    disk.open_error = EACCES;
    auto out = writer.write(numbered(texts, 0, 1), now, 0.0);
    CHECK(out.failed == EACCES);
    CHECK(out.dropped == 1);
    disk.open_error = 0;
    disk.rename_error = EROFS;
    now += std::chrono::seconds(2);
    // The notice (23 bytes) and 2 lines fit in 45 bytes; the third rotates, and fails.
    out = writer.write(numbered(texts, 1, 3), now, 0.0);
    CHECK(out.recovered == 1);
    CHECK(out.lines == 2);
    CHECK(out.dropped == 1);
    CHECK(out.failed == EROFS);
    CHECK(file_lines(path) ==
          std::vector<std::string>{"pkitd: 1 lines dropped", "line 0001", "line 0002"});
}

TEST_CASE("a removed log directory is made again at the next try") {
    TempDir dir;
    PosixLogDisk disk;
    std::string path = dir.path() + "/logs/web.log";
    LogFileWriter writer(disk, raw_spec(path, 20, 2), "web");
    std::vector<std::string> texts;
    auto now = Clock::now();
    (void)writer.write(numbered(texts, 0, 1), now, 0.0);
    std::filesystem::remove_all(dir.path() + "/logs");
    // Line 1 still goes to the open (unlinked) file; line 2's rotation finds PATH gone:
    // an episode, then the directory is made again.
    auto out = writer.write(numbered(texts, 1, 2), now, 0.0);
    CHECK(out.failed == ENOENT);
    CHECK(out.dropped == 1);
    out = writer.retry(now + std::chrono::seconds(2), 0.0);
    CHECK(out.recovered_episode);
    CHECK(file_lines(path) == std::vector<std::string>{"pkitd: 1 lines dropped"});
}

TEST_CASE(
    "a real 256 KiB tmpfs that fills: whole lines, exact count, the notice once room is made") {
    TempDir dir;
    std::string mount_point = dir.path() + "/small";
    std::filesystem::create_directory(mount_point);
    if (::mount("none", mount_point.c_str(), "tmpfs", 0, "size=256k") != 0) {
        MESSAGE("skipped: cannot mount a tmpfs here (needs root): " << std::strerror(errno));
        return;
    }
    struct Unmount {
        std::string at;
        ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
    } unmount{mount_point};
    PosixLogDisk disk;
    std::string path = mount_point + "/web.log";
    LogFileWriter writer(disk, raw_spec(path, 1 << 30, 0), "web");
    std::vector<std::string> texts;
    auto now = Clock::now();
    std::uint64_t written = 0;
    std::uint64_t dropped = 0;
    int episodes = 0;
    for (int batch = 0; batch < 40; ++batch) {  // 40 x 1000 x 10 bytes: 400 KB > 256 KiB
        auto out = writer.write(numbered(texts, batch * 1000, 1000), now, 0.0);
        written += out.lines;
        dropped += out.dropped;
        episodes += out.failed != 0 ? 1 : 0;
    }
    CHECK(episodes == 1);
    CHECK(written + dropped == 40000);
    CHECK(dropped > 0);
    std::string text = file_text(path);
    CHECK(text.back() == '\n');
    CHECK(file_lines(path).size() == written);
    // Room again (another file removed), a second later: the notice, exact.
    std::filesystem::resize_file(path, 0);
    auto out = writer.retry(now + std::chrono::seconds(2), 0.0);
    CHECK(out.recovered == dropped);
    CHECK(file_lines(path).back() == "pkitd: " + std::to_string(dropped) + " lines dropped");
}

TEST_CASE("a real read-only bind mount: an EROFS episode, lines counted") {
    TempDir dir;
    std::string logs = dir.path() + "/logs";
    std::filesystem::create_directory(logs);
    if (::mount(logs.c_str(), logs.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
        ::mount(nullptr, logs.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0) {
        ::umount2(logs.c_str(), MNT_DETACH);
        MESSAGE("skipped: cannot make a read-only bind mount here (needs root): "
                << std::strerror(errno));
        return;
    }
    struct Unmount {
        std::string at;
        ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
    } unmount{logs};
    PosixLogDisk disk;
    LogFileWriter writer(disk, raw_spec(logs + "/web.log", 1 << 20, 2), "web");
    std::vector<std::string> texts;
    auto out = writer.write(numbered(texts, 0, 3), Clock::now(), 0.0);
    CHECK(out.failed == EROFS);
    CHECK(out.dropped == 3);
    CHECK(writer.unreported() == 3);
}

}  // namespace pkit::shell::test
