// Log files (SPEC §18): every line of every run in the service's file in the chosen
// format, rotation by size without a line lost or written twice, `pkitctl rotate`,
// SIGUSR1 after an external mv, a reload that switches the file without a restart,
// `logs -n`/`--since` reading back past the tail, and --check on a path that is no file.

#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <regex>

#include "tests/integration/log_files_common.hpp"

using namespace pkit::itest;

namespace {

std::string output_table(const std::string& keys) {
    return "[output]\nforward = \"none\"\n" + keys;
}

}  // namespace

TEST_CASE("log files: each line of both streams reaches the file in text, json or raw") {
    TempDir dir;
    const std::string script = "echo to-out; echo to-err >&2; echo second; exec sleep 1000";
    dir.service("text", sh_command(script) +
                            output_table("file = " + toml_str(dir.file("logs/text.log")) + "\n"));
    dir.service("json",
                sh_command(script) + output_table("file = " + toml_str(dir.file("logs/json.log")) +
                                                  "\nfile_format = \"json\"\n"));
    dir.service("raw", sh_command(script) + output_table("file = " + toml_str(dir.file("raw.log")) +
                                                         "\nfile_format = \"raw\"\n"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    wait_for([&] { return read_lines(dir.file("logs/text.log")).size() == 3; }, 10s,
             "three lines in text.log", [&] { return read_file(dir.file("logs/text.log")); });
    const std::regex text_line(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (out|err) (.*)$)");
    std::vector<std::string> streams;
    std::vector<std::string> texts;
    for (const std::string& line : read_lines(dir.file("logs/text.log"))) {
        std::smatch m;
        REQUIRE_MESSAGE(std::regex_match(line, m, text_line), line);
        streams.push_back(m[1]);
        texts.push_back(m[2]);
    }
    // Both pipes are read as they come: stdout's two lines in order, stderr's in its place.
    CHECK(std::ranges::count(streams, "err") == 1);
    CHECK(std::ranges::find(texts, "to-err") != texts.end());
    CHECK(std::ranges::find(texts, "to-out") < std::ranges::find(texts, "second"));

    wait_for([&] { return read_lines(dir.file("logs/json.log")).size() == 3; }, 10s,
             "three lines in json.log", [&] { return read_file(dir.file("logs/json.log")); });
    for (const std::string& line : read_lines(dir.file("logs/json.log"))) {
        json object = json::parse(line);
        CHECK(object["service"] == "json");
        CHECK(object["run"] == 1);
        CHECK((object["stream"] == "stdout" || object["stream"] == "stderr"));
        CHECK(object["at"].get<std::string>().size() == 24);
        CHECK(object["text"].is_string());
    }
    wait_for([&] { return read_lines(dir.file("raw.log")).size() == 3; }, 10s,
             "three lines in raw.log", [&] { return read_file(dir.file("raw.log")); });
    std::vector<std::string> raw = read_lines(dir.file("raw.log"));
    CHECK(std::ranges::find(raw, "to-out") != raw.end());
    CHECK(std::ranges::find(raw, "to-err") != raw.end());
    // The file is pkitd's (0640).
    auto perms = std::filesystem::status(dir.file("raw.log")).permissions();
    CHECK((perms & std::filesystem::perms::all) ==
          (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
           std::filesystem::perms::group_read));
    Client client = pkitd.client();
    json log_file = status_of(client, "text")["log_file"];
    CHECK(log_file["path"] == dir.file("logs/text.log"));
    CHECK(log_file["size"] == read_file(dir.file("logs/text.log")).size());
    CHECK(log_file["dropped"] == 0);
    CHECK(status_of(client, "raw")["log_file"]["rotations"] == 0);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("log files: [output] dir in pkitd.toml gives every service DIR/NAME.log") {
    TempDir dir;
    dir.daemon_config("[output]\ndir = " + toml_str(dir.file("all")) + "\nfile_format = \"raw\"\n");
    dir.service("one", sh_command("echo from-one; exec sleep 1000") + output_table(""));
    dir.service("none",
                sh_command("echo not-kept; exec sleep 1000") + output_table("file = \"\"\n"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    wait_file(dir.file("all/one.log"));
    wait_for([&] { return read_file(dir.file("all/one.log")) == "from-one\n"; }, 10s, "one's line",
             [&] { return read_file(dir.file("all/one.log")); });
    Client client = pkitd.client();
    wait_running(client, "none");
    CHECK(status_of(client, "none")["log_file"].is_null());
    CHECK_FALSE(std::filesystem::exists(dir.file("all/none.log")));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("log files: rotation by size loses and duplicates no line") {
    TempDir dir;
    const long count = 20000;  // about 2.6 MB of text lines: some 40 rotations of 64 KiB
    dir.service("num", sh_command(numbered_script(1, count, true) + "; exec sleep 1000") +
                           output_table("file = " + toml_str(dir.file("num.log")) +
                                        "\nfile_max_size = \"64KiB\"\nfile_keep = 1000\n"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_for(
        [&] {
            auto numbers = numbers_in_files(dir.file("num.log"), 1000);
            return !numbers.empty() && numbers.back() == count;
        },
        30s, "the last line in the file");
    std::vector<long> numbers = numbers_in_files(dir.file("num.log"), 1000);
    CHECK(contiguous(numbers, 1, count));
    json log_file = status_of(client, "num")["log_file"];
    CHECK(log_file["rotations"].get<int>() >= 30);
    CHECK(log_file["dropped"] == 0);
    // Every file but the newest was cut at a line, none past the size.
    for (int k = 1; std::filesystem::exists(dir.file("num.log." + std::to_string(k))); ++k) {
        std::string content = read_file(dir.file("num.log." + std::to_string(k)));
        CHECK(content.size() <= 64 * 1024);
        CHECK(content.ends_with("\n"));
    }
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("log files: file_keep bounds the rotated files, the oldest dropped") {
    TempDir dir;
    dir.service("num", numbered_lines(1, 5000) +
                           output_table("file = " + toml_str(dir.file("num.log")) +
                                        "\nfile_max_size = \"64KiB\"\nfile_keep = 2\n"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    wait_for(
        [&] {
            auto numbers = numbers_in_files(dir.file("num.log"), 2);
            return !numbers.empty() && numbers.back() == 5000;
        },
        30s, "the last line in the file");
    CHECK(std::filesystem::exists(dir.file("num.log.2")));
    CHECK_FALSE(std::filesystem::exists(dir.file("num.log.3")));
    std::vector<long> numbers = numbers_in_files(dir.file("num.log"), 2);
    CHECK(contiguous(numbers, numbers.front(), 5000));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("log files: pkitctl rotate moves PATH to PATH.1 now") {
    TempDir dir;
    dir.service("web", sh_command("echo before; read x < " + dir.file("gate") +
                                  "; echo after; exec sleep 1000") +
                           output_table("file = " + toml_str(dir.file("web.log")) + "\n"));
    dir.service("bare", runner_toml());
    ::mkfifo(dir.file("gate").c_str(), 0600);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    wait_for([&] { return read_file(dir.file("web.log")).ends_with("out before\n"); }, 10s,
             "the first line");
    CommandResult rotated = ctl(pkitd, {"rotate", "web"});
    CHECK_MESSAGE(rotated.exit_code == 0, rotated.all());
    CHECK(rotated.out.find("web: log file rotated") != std::string::npos);
    Client client = pkitd.client();
    wait_for([&] { return status_of(client, "web")["log_file"]["rotations"] == 1; }, 10s,
             "one rotation");
    CHECK(read_file(dir.file("web.log.1")).ends_with("out before\n"));
    write_file(dir.file("gate"), "go\n");
    wait_for([&] { return read_file(dir.file("web.log")).ends_with("out after\n"); }, 10s,
             "the next line in a new file", [&] { return read_file(dir.file("web.log")); });
    CHECK(read_lines(dir.file("web.log")).size() == 1);
    // A service without a log file, named, is an error; unnamed, every file rotates.
    CommandResult bare = ctl(pkitd, {"rotate", "bare"});
    CHECK(bare.exit_code == 1);
    CHECK(bare.err.find("bare has no log file") != std::string::npos);
    CommandResult all = ctl(pkitd, {"rotate"});
    CHECK_MESSAGE(all.exit_code == 0, all.all());
    wait_for([&] { return status_of(client, "web")["log_file"]["rotations"] == 2; }, 10s,
             "a second rotation");
    CHECK(read_file(dir.file("web.log.2")).ends_with("out before\n"));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("log files: SIGUSR1 reopens a file an external logrotate moved away") {
    TempDir dir;
    dir.service("tick", sh_command("i=0; while true; do i=$((i+1)); echo \"n $i\"; sleep 0.02; "
                                   "done") +
                            output_table("file = " + toml_str(dir.file("tick.log")) + "\n"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    wait_for([&] { return read_lines(dir.file("tick.log")).size() >= 5; }, 10s, "some lines");
    std::filesystem::rename(dir.file("tick.log"), dir.file("tick.log.moved"));
    // Until told, pkitd writes on into the moved file (as svlogd and s6-log would not
    // know either): nothing at the path.
    wait_for([&] { return read_lines(dir.file("tick.log.moved")).size() >= 15; }, 10s,
             "lines in the moved file");
    CHECK_FALSE(std::filesystem::exists(dir.file("tick.log")));
    pkitd.signal(SIGUSR1);
    wait_file(dir.file("tick.log"));
    wait_for([&] { return read_lines(dir.file("tick.log")).size() >= 5; }, 10s,
             "lines in the new file");
    CHECK(pkitd.stop() == 0);
    // Together, the two files hold every line once, in order.
    std::vector<long> numbers = numbers_in_files(dir.file("tick.log.moved"), 0);
    std::vector<long> after = numbers_in_files(dir.file("tick.log"), 0);
    REQUIRE_FALSE(after.empty());
    numbers.insert(numbers.end(), after.begin(), after.end());
    CHECK(contiguous(numbers, 1, numbers.back()));
}

TEST_CASE("log files: a reload that changes only the file switches it between two lines") {
    TempDir dir;
    const std::string script = "i=0; while true; do i=$((i+1)); echo \"n $i\"; sleep 0.01; done";
    dir.service("tick",
                sh_command(script) + output_table("file = " + toml_str(dir.file("a.log")) + "\n"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json before = wait_running(client, "tick");
    wait_for([&] { return read_lines(dir.file("a.log")).size() >= 10; }, 10s, "lines in a.log");
    dir.service("tick",
                sh_command(script) + output_table("file = " + toml_str(dir.file("b.log")) + "\n"));
    reload(client);
    wait_for([&] { return read_lines(dir.file("b.log")).size() >= 10; }, 10s, "lines in b.log");
    json after = status_of(client, "tick");
    CHECK(after["run"] == before["run"]);
    CHECK(after["pid"] == before["pid"]);
    CHECK(after["log_file"]["path"] == dir.file("b.log"));
    std::vector<long> numbers = numbers_in_files(dir.file("a.log"), 0);
    std::vector<long> b = numbers_in_files(dir.file("b.log"), 0);
    numbers.insert(numbers.end(), b.begin(), b.end());
    CHECK(contiguous(numbers, 1, numbers.back()));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("log files: logs -n beyond the tail and --since before it read the files back") {
    TempDir dir;
    dir.service("num", numbered_lines(1, 3000) +
                           output_table("max_lines = 10\nfile = " + toml_str(dir.file("num.log")) +
                                        "\nfile_max_size = \"64KiB\"\nfile_keep = 100\n"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    wait_for(
        [&] {
            auto numbers = numbers_in_files(dir.file("num.log"), 100);
            return !numbers.empty() && numbers.back() == 3000;
        },
        30s, "the last line in the file");
    auto numbers_of = [](const std::string& text) {
        std::vector<long> numbers;
        for (const std::string& line : nonempty_lines(text)) {
            REQUIRE_MESSAGE(line.starts_with("n "), line);
            numbers.push_back(std::stol(line.substr(2)));
        }
        return numbers;
    };
    // The tail holds 10; 500 asks for rotated files too.
    CommandResult last = ctl(pkitd, {"logs", "num", "-n", "500"});
    REQUIRE_MESSAGE(last.exit_code == 0, last.all());
    CHECK(contiguous(numbers_of(last.out), 2501, 3000));
    CommandResult since = ctl(pkitd, {"logs", "num", "--since", "1h"});
    REQUIRE_MESSAGE(since.exit_code == 0, since.all());
    CHECK(contiguous(numbers_of(since.out), 1, 3000));
    // Within the tail, the tail alone.
    CommandResult few = ctl(pkitd, {"logs", "num", "-n", "5"});
    CHECK(contiguous(numbers_of(few.out), 2996, 3000));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("log files: --check rejects a log file path that is not a regular file") {
    TempDir dir;
    std::filesystem::create_directories(dir.file("adir"));
    dir.service("web", runner_toml() + "[output]\nfile = " + toml_str(dir.file("adir")) + "\n");
    CommandResult check = run_pkitd({"--check", "--config", dir.str()});
    CHECK(check.exit_code == 2);
    CHECK_MESSAGE(check.all().find("web.toml:") != std::string::npos, check.all());
    CHECK_MESSAGE(check.all().find("is a directory, not a regular file") != std::string::npos,
                  check.all());
}
