// Log files when the disk fails (SPEC §18), for real as root: a 256 KiB tmpfs that
// fills and a read-only bind mount. The service is never stopped or slowed, its tail
// keeps flowing, the lines the file lost are counted exactly and the count is written
// into the file once it can be; and an upgrade in place loses no line of the file.

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "tests/integration/log_files_common.hpp"

using namespace pkit::itest;

namespace {

// A mount made for one case, detached at its end whatever happens.
class Mounted {
public:
    explicit Mounted(std::string target) : m_target(std::move(target)) {}
    ~Mounted() {
        if (m_mounted) {
            ::umount2(m_target.c_str(), MNT_DETACH);
        }
    }
    Mounted(const Mounted&) = delete;
    Mounted& operator=(const Mounted&) = delete;
    bool tmpfs(const std::string& options) {
        m_mounted = ::mount("tmpfs", m_target.c_str(), "tmpfs", 0, options.c_str()) == 0;
        return m_mounted;
    }
    bool bind_read_only() {
        m_mounted = ::mount(m_target.c_str(), m_target.c_str(), nullptr, MS_BIND, nullptr) == 0;
        return m_mounted && set_read_only(true);
    }
    bool set_read_only(bool ro) {
        unsigned long flags = MS_BIND | MS_REMOUNT | (ro ? MS_RDONLY : 0);
        return ::mount(nullptr, m_target.c_str(), nullptr, flags, nullptr) == 0;
    }

private:
    std::string m_target;
    bool m_mounted = false;
};

std::string output_file(const std::string& path, const std::string& more = "") {
    return "[output]\nforward = \"none\"\nmax_lines = 100\nfile = " + toml_str(path) + "\n" + more;
}

bool tail_has(Client& client, const std::string& name, const std::string& text) {
    json lines = client.request({{"cmd", "logs"}, {"service", name}})["result"]["lines"];
    for (const json& line : lines) {
        if (line["text"].get<std::string>().starts_with(text)) {
            return true;
        }
    }
    return false;
}

}  // namespace

TEST_CASE("log files: a 256 KiB tmpfs that fills drops lines, counts them exactly, and says so") {
    if (::geteuid() != 0) {
        PKIT_SKIP("mounting a tmpfs needs root; the faulty LogDisk unit tests cover the logic");
    }
    TempDir dir;
    std::filesystem::create_directories(dir.file("small"));
    Mounted small(dir.file("small"));
    REQUIRE_MESSAGE(small.tmpfs("size=256k"), "mount -t tmpfs: " << std::strerror(errno));
    // 150 KiB taken: the file fills at about 100 KiB, some 900 of the 2000 lines.
    write_file(dir.file("small/filler"), std::string(150 * 1024, 'f'));
    ::mkfifo(dir.file("gate").c_str(), 0600);
    dir.service("num", numbered_lines(1, 2000,
                                      "read x < " + dir.file("gate") + "; " +
                                          numbered_script(2001, 2100) + "; exec sleep 1000") +
                           output_file(dir.file("small/num.log"), "file_max_size = \"1MiB\"\n"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_for([&] { return tail_has(client, "num", "n 2000 "); }, 20s, "the tail reaches line 2000");
    wait_for([&] { return status_of(client, "num")["log_file"]["dropped"].get<long>() > 0; }, 10s,
             "dropped lines counted");
    wait_for(
        [&] {
            return pkitd.log().find("num: log file " + dir.file("small/num.log") +
                                    ": No space left on device; lines are dropped") !=
                   std::string::npos;
        },
        10s, "the failure logged", [&] { return pkitd.log(); });
    json row = status_of(client, "num");
    CHECK(row["run"] == 1);
    CHECK(row["state"] == "running");
    // Space again: within a second's retry the notice counting the lost lines goes in,
    // and the next lines after it.
    std::filesystem::remove(dir.file("small/filler"));
    wait_for([&] { return dropped_notices(dir.file("small/num.log")) > 0; }, 10s,
             "the notice in the file", [&] { return pkitd.log(); });
    write_file(dir.file("gate"), "go\n");
    wait_for([&] { return tail_has(client, "num", "n 2100 "); }, 20s, "the tail reaches 2100");
    wait_for(
        [&] {
            auto numbers = numbers_in_files(dir.file("small/num.log"), 0);
            return !numbers.empty() && numbers.back() == 2100;
        },
        20s, "line 2100 in the file", [&] { return pkitd.log(); });
    std::vector<long> numbers = numbers_in_files(dir.file("small/num.log"), 0);
    // Lines in order, none twice; what is missing is exactly what the notices and
    // status count.
    CHECK(std::ranges::is_sorted(numbers));
    CHECK(std::ranges::adjacent_find(numbers) == numbers.end());
    const long missing = 2100 - static_cast<long>(numbers.size());
    CHECK(missing > 0);
    CHECK(dropped_notices(dir.file("small/num.log")) == missing);
    CHECK(status_of(client, "num")["log_file"]["dropped"] == missing);
    CHECK(status_of(client, "num")["run"] == 1);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("log files: a read-only mount drops lines with log_error, writes again once writable") {
    if (::geteuid() != 0) {
        PKIT_SKIP("a read-only bind mount needs root; the faulty LogDisk unit tests cover it");
    }
    TempDir dir;
    std::filesystem::create_directories(dir.file("ro"));
    Mounted ro(dir.file("ro"));
    REQUIRE_MESSAGE(ro.bind_read_only(), "mount --bind -o ro: " << std::strerror(errno));
    ::mkfifo(dir.file("gate").c_str(), 0600);
    ::mkfifo(dir.file("start").c_str(), 0600);
    dir.service("num", sh_command("read x < " + dir.file("start") + "; " + numbered_script(1, 50) +
                                  "; read x < " + dir.file("gate") + "; " +
                                  numbered_script(51, 60) + "; exec sleep 1000") +
                           output_file(dir.file("ro/num.log")));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    EventStream events(pkitd.socket());
    write_file(dir.file("start"), "go\n");
    Client client = pkitd.client();
    wait_for([&] { return tail_has(client, "num", "n 50 "); }, 10s, "the tail reaches line 50");
    wait_for([&] { return status_of(client, "num")["log_file"]["dropped"] == 50; }, 10s,
             "50 lines dropped", [&] { return status_of(client, "num").dump(); });
    events.until(
        [](const json& e) {
            return e["type"] == "log_error" && e["service"] == "num" &&
                   e["reason"].get<std::string>().find("Read-only file system") !=
                       std::string::npos;
        },
        10s, "a log_error event");
    CHECK_FALSE(std::filesystem::exists(dir.file("ro/num.log")));
    REQUIRE(ro.set_read_only(false));
    wait_for([&] { return dropped_notices(dir.file("ro/num.log")) == 50; }, 10s,
             "the notice in the file", [&] { return pkitd.log(); });
    write_file(dir.file("gate"), "go\n");
    wait_for(
        [&] {
            auto numbers = numbers_in_files(dir.file("ro/num.log"), 0);
            return !numbers.empty() && numbers.back() == 60;
        },
        20s, "the later lines in the file", [&] { return pkitd.log(); });
    CHECK(contiguous(numbers_in_files(dir.file("ro/num.log"), 0), 51, 60));
    CHECK(dropped_notices(dir.file("ro/num.log")) == 50);
    CHECK(read_lines(dir.file("ro/num.log")).front().ends_with("err pkitd: 50 lines dropped"));
    CHECK(status_of(client, "num")["run"] == 1);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("log files: an upgrade in place keeps appending to the same file, no line lost") {
    TempDir dir;
    dir.service("tick", sh_command("i=0; while true; do i=$((i+1)); echo \"n $i\"; sleep 0.001; "
                                   "done") +
                            output_file(dir.file("tick.log")));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_for([&] { return read_lines(dir.file("tick.log")).size() >= 50; }, 10s, "lines");
    // Three times: what was read in the turn of the exec is still queued then (no line
    // of the file's may be lost), which one upgrade catches only now and then.
    for (int upgrade = 0; upgrade < 3; ++upgrade) {
        CommandResult upgraded = ctl(pkitd, {"upgrade"}, 40s);
        REQUIRE_MESSAGE(upgraded.exit_code == 0, upgraded.all());
        const std::size_t at_upgrade = read_lines(dir.file("tick.log")).size();
        wait_for([&] { return read_lines(dir.file("tick.log")).size() >= at_upgrade + 100; }, 10s,
                 "lines after the upgrade");
    }
    Client after = pkitd.client();
    CHECK(status_of(after, "tick")["run"] == 1);
    CHECK(status_of(after, "tick")["log_file"]["path"] == dir.file("tick.log"));
    CHECK(pkitd.stop() == 0);
    std::vector<long> numbers = numbers_in_files(dir.file("tick.log"), 0);
    CHECK(contiguous(numbers, 1, numbers.back()));
}
