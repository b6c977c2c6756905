// pkitctl commands and exit statuses not covered elsewhere (SPEC §10): start, stop and
// restart --all, signal --group, logs -n/--previous/--stream/-f, reload's summary,
// exit 4 for no reply within --timeout and for a missing socket, colours on a terminal,
// and the ping guarantee of SPEC §9 measured as a maximum.

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// A Unix socket bound at `path`; listening when `listen` (nothing ever accepts).
// Closed at destruction.
class RawSocket {
public:
    RawSocket(const std::string& path, bool listen) {
        m_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        REQUIRE(m_fd >= 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        REQUIRE(path.size() < sizeof addr.sun_path);
        std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
        REQUIRE_MESSAGE(::bind(m_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0,
                        "bind " << path << ": " << std::strerror(errno));
        if (listen) {
            REQUIRE(::listen(m_fd, 16) == 0);
        }
    }
    ~RawSocket() { ::close(m_fd); }
    RawSocket(const RawSocket&) = delete;
    RawSocket& operator=(const RawSocket&) = delete;

private:
    int m_fd = -1;
};

// The status of every service, by name order of `names`.
std::vector<json> statuses(Client& client, const std::vector<std::string>& names) {
    std::vector<json> out;
    for (const auto& name : names) {
        out.push_back(status(client, name));
    }
    return out;
}

// Lines of `text` (split on '\n', the last one kept when not terminated).
std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < text.size()) {
        auto end = text.find('\n', start);
        out.push_back(text.substr(start, end == std::string::npos ? end : end - start));
        if (end == std::string::npos) {
            break;
        }
        start = end + 1;
    }
    return out;
}

// The rows of a status table whose first cell is `name`.
std::string row_of(const std::string& table, const std::string& name) {
    for (const auto& line : split_lines(table)) {
        if (line.starts_with(name + " ")) {
            return line;
        }
    }
    return "";
}

}  // namespace

TEST_CASE("ctl commands: start, stop and restart --all act on every service") {
    TempDir dir;
    const std::vector<std::string> names{"a", "b", "c"};
    for (const auto& name : names) {
        dir.service(name, sh_command("exec sleep 1000"));
    }
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    std::vector<json> before;
    for (const auto& name : names) {
        before.push_back(wait_status(client, name, state_is("running"), 5s, name + " running"));
    }

    // restart --all: a fresh run, a new PID, for each.
    auto restarted = ctl(pkitd, {"restart", "--all"});
    INFO("restart --all:\n" << restarted.all());
    CHECK(restarted.exit_code == 0);
    for (std::size_t i = 0; i < names.size(); ++i) {
        json after = wait_status(
            client, names[i],
            [](const json& s) { return s["state"] == "running" && s.value("run", 0) == 2; }, 5s,
            names[i] + " running its second run");
        CHECK(after["pid"] != before[i]["pid"]);
        CHECK(after["restarts"] == 0);
        CHECK_FALSE(row_of(restarted.out, names[i]).empty());
        wait_for([&] { return !pid_alive(before[i]["pid"].get<pid_t>()); }, 5s,
                 "the first run of " + names[i] + " is gone");
    }

    // stop --all: replied once the runs have ended, so every row says stopped.
    auto stopped = ctl(pkitd, {"stop", "--all"});
    INFO("stop --all:\n" << stopped.all());
    CHECK(stopped.exit_code == 0);
    for (const auto& s : statuses(client, names)) {
        CHECK(s["state"] == "stopped");
        CHECK(s["stopped"] == "operator");
        CHECK(s["pid"].is_null());
        CHECK(row_of(stopped.out, s["name"]).find("stopped") != std::string::npos);
    }

    // start --all: all running again, a third run each.
    auto started = ctl(pkitd, {"start", "--all"});
    INFO("start --all:\n" << started.all());
    CHECK(started.exit_code == 0);
    for (const auto& name : names) {
        json s = wait_status(client, name, state_is("running"), 5s, name + " running again");
        CHECK(s["run"] == 3);
    }

    // Names and --all together, or neither, are usage errors that change nothing.
    auto both = ctl(pkitd, {"stop", "--all", "a"});
    CHECK_MESSAGE(both.exit_code == 2, both.all());
    auto neither = ctl(pkitd, {"stop"});
    CHECK_MESSAGE(neither.exit_code == 2, neither.all());
    CHECK(neither.err.find("--all") != std::string::npos);
    for (const auto& s : statuses(client, names)) {
        CHECK(s["state"] == "running");
    }
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ctl commands: the protocol's all = true stops and starts every service") {
    TempDir dir;
    const std::vector<std::string> names{"a", "b", "c"};
    for (const auto& name : names) {
        dir.service(name, sh_command("exec sleep 1000"));
    }
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    for (const auto& name : names) {
        wait_status(client, name, state_is("running"), 5s, name + " running");
    }

    json reply = client.request({{"cmd", "stop"}, {"all", true}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    REQUIRE(reply["result"]["services"].size() == names.size());
    for (const auto& s : reply["result"]["services"]) {
        CHECK_MESSAGE(s["state"] == "stopped", s.dump());
    }
    for (const auto& s : statuses(client, names)) {
        CHECK(s["state"] == "stopped");
    }

    reply = client.request({{"cmd", "start"}, {"all", true}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    CHECK(reply["result"]["services"].size() == names.size());
    for (const auto& name : names) {
        wait_status(client, name, state_is("running"), 5s, name + " started by all");
    }

    // Neither services nor all: refused.
    reply = client.request({{"cmd", "stop"}});
    CHECK(reply["ok"] == false);
    CHECK(reply["error"]["code"] == "bad_request");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ctl commands: pkitctl signal --group reaches the whole process group") {
    TempDir dir;
    const std::string log = dir.file("signals");
    const std::string loop = "while :; do sleep 0.05; done";
    dir.service("svc", sh_command("trap 'echo main >> " + log + "' USR1; (trap 'echo child >> " +
                                  log + "' USR1; touch " + dir.file("child") + "; " + loop +
                                  ") & touch " + dir.file("main") + "; " + loop));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_file(dir.file("main"));
    wait_file(dir.file("child"));

    auto main_only = ctl(pkitd, {"signal", "svc", "USR1"});
    CHECK_MESSAGE(main_only.exit_code == 0, main_only.all());
    wait_for([&] { return read_lines(log).size() == 1; }, 5s, "the main process's trap",
             [&] { return read_file(log); });

    auto group = ctl(pkitd, {"signal", "--group", "svc", "SIGUSR1"});
    INFO("signal --group:\n" << group.all());
    CHECK(group.exit_code == 0);
    CHECK(row_of(group.out, "svc").find("running") != std::string::npos);
    wait_for([&] { return read_lines(log).size() == 3; }, 5s, "both traps",
             [&] { return read_file(log); });
    auto lines = read_lines(log);
    CHECK(std::count(lines.begin(), lines.end(), "main") == 2);
    CHECK(std::count(lines.begin(), lines.end(), "child") == 1);

    // An unknown signal name is a usage error, caught before anything is sent.
    auto unknown = ctl(pkitd, {"signal", "--group", "svc", "NOSUCHSIG"});
    CHECK_MESSAGE(unknown.exit_code == 2, unknown.all());
    CHECK(unknown.err.find("unknown signal \"NOSUCHSIG\"") != std::string::npos);
    auto no_signal = ctl(pkitd, {"signal", "svc"});
    CHECK_MESSAGE(no_signal.exit_code == 2, no_signal.all());
    CHECK(status(client, "svc")["state"] == "running");
    CHECK(read_lines(log).size() == 3);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ctl commands: pkitctl logs -n, --stream and --previous select lines") {
    TempDir dir;
    const std::string count = dir.file("count");
    // `lines` writes stdout only, so the order of its tail is the order written.
    dir.service("lines", sh_command("printf 'l1\\nl2\\nl3\\nl4\\n'; exec sleep 1000") +
                             "[output]\nforward = \"none\"\n");
    // Each run of `svc` prints its number on stdout and stderr and a few lines more; the
    // first run crashes, the second stays. (The two pipes are read in no set order, so
    // only the order within one stream is compared.)
    dir.service("svc", sh_command("n=$(cat " + count + " 2>/dev/null || echo 0); n=$((n+1)); " +
                                  "echo $n > " + count + "; echo run $n; echo err $n >&2; " +
                                  "echo out-a; echo out-b; echo err-c >&2; " +
                                  "if [ $n -ge 2 ]; then exec sleep 1000; fi; exit 1") +
                           restart_table("on_crash", "50ms") + "[output]\nforward = \"none\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();

    wait_for(
        [&] {
            return ctl(pkitd, {"logs", "lines"}).out == "l1\nl2\nl3\nl4\n";
        },
        5s, "the four lines",
        [&] {
            return ctl(pkitd, {"logs", "lines"}).all();
        });
    auto last_two = ctl(pkitd, {"logs", "lines", "-n", "2"});
    CHECK_MESSAGE(last_two.exit_code == 0, last_two.all());
    CHECK(last_two.out == "l3\nl4\n");
    CHECK(ctl(pkitd, {"logs", "lines", "--lines", "1"}).out == "l4\n");
    CHECK(ctl(pkitd, {"logs", "lines", "-n", "100"}).out == "l1\nl2\nl3\nl4\n");
    CHECK(ctl(pkitd, {"logs", "lines", "-n", "-1"}).exit_code == 2);

    wait_status(client, "svc", run_at_least(2), 5s, "the second run");
    wait_for(
        [&] {
            return split_lines(ctl(pkitd, {"logs", "svc"}).out).size() == 5;
        },
        5s, "the second run's five lines",
        [&] {
            return ctl(pkitd, {"logs", "svc"}).all();
        });
    auto err_only = ctl(pkitd, {"logs", "svc", "--stream", "stderr"});
    CHECK_MESSAGE(err_only.exit_code == 0, err_only.all());
    CHECK(err_only.out == "err 2\nerr-c\n");
    CHECK(ctl(pkitd, {"logs", "svc", "--stream", "stdout"}).out == "run 2\nout-a\nout-b\n");
    auto err_json = ctl(pkitd, {"--json", "logs", "svc", "--stream", "stderr"});
    json parsed = json::parse(err_json.out, nullptr, false);
    REQUIRE_MESSAGE(parsed.is_object(), err_json.out);
    REQUIRE(parsed["lines"].size() == 2);
    for (const auto& line : parsed["lines"]) {
        CHECK(line["stream"] == "stderr");
    }
    CHECK(ctl(pkitd, {"logs", "svc", "--stream", "both"}).exit_code == 2);
    // -n with --stream: the last lines of that stream, whatever the other wrote after.
    CHECK(ctl(pkitd, {"logs", "svc", "--stream", "stdout", "-n", "2"}).out == "out-a\nout-b\n");
    CHECK(ctl(pkitd, {"logs", "svc", "--stream", "stderr", "-n", "1"}).out == "err-c\n");
    json one = json::parse(
        ctl(pkitd, {"--json", "logs", "svc", "--stream", "stdout", "-n", "1"}).out, nullptr, false);
    REQUIRE_MESSAGE(one.is_object(), one.dump());
    REQUIRE(one["lines"].size() == 1);
    CHECK(one["lines"][0]["text"] == "out-b");

    auto previous = ctl(pkitd, {"logs", "svc", "--previous"});
    CHECK_MESSAGE(previous.exit_code == 0, previous.all());
    auto previous_lines = split_lines(previous.out);
    std::sort(previous_lines.begin(), previous_lines.end());
    CHECK(previous_lines == std::vector<std::string>{"err 1", "err-c", "out-a", "out-b", "run 1"});
    CHECK(ctl(pkitd, {"logs", "svc", "--previous", "--stream", "stdout"}).out ==
          "run 1\nout-a\nout-b\n");
    CHECK(ctl(pkitd, {"logs", "svc", "--previous", "--stream", "stderr"}).out == "err 1\nerr-c\n");
    CHECK(ctl(pkitd, {"logs", "svc", "--previous", "--stream", "stdout", "-n", "1"}).out ==
          "out-b\n");

    auto unknown = ctl(pkitd, {"logs", "nosuch"});
    CHECK_MESSAGE(unknown.exit_code == 1, unknown.all());
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ctl commands: pkitctl logs -f prints new lines as they come until SIGINT") {
    TempDir dir;
    const std::string go = dir.file("go");
    dir.service("svc", sh_command("echo first; echo first-err >&2; while [ ! -e " + go +
                                  " ]; do sleep 0.05; done; echo second; echo second-err >&2; "
                                  "exec sleep 1000") +
                           "[output]\nforward = \"none\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_for(
        [&] {
            return texts(client.request({{"cmd", "logs"}, {"service", "svc"}})["result"]).size() ==
                   2;
        },
        5s, "the first two lines");

    BackgroundCtl follow({"--socket", pkitd.socket(), "logs", "svc", "-f"}, dir.file("f.out"),
                         dir.file("f.err"));
    BackgroundCtl follow_err(
        {"--socket", pkitd.socket(), "logs", "--follow", "svc", "--stream", "stderr"},
        dir.file("e.out"), dir.file("e.err"));
    const auto shown = [&] {
        return "stdout:\n" + read_file(dir.file("f.out")) + "stderr:\n" +
               read_file(dir.file("f.err")) + "--stream stderr:\n" + read_file(dir.file("e.out")) +
               read_file(dir.file("e.err"));
    };
    // Both streams' lines, in any order between the streams.
    const auto sorted_lines = [&](const std::string& file) {
        auto lines = split_lines(read_file(dir.file(file)));
        std::sort(lines.begin(), lines.end());
        return lines;
    };
    // The tail first: once it is printed, both are subscribed.
    wait_for(
        [&] {
            return sorted_lines("f.out") == std::vector<std::string>{"first", "first-err"} &&
                   read_file(dir.file("e.out")) == "first-err\n";
        },
        10s, "the tail printed by both", shown);
    CHECK(follow.running());
    CHECK(follow_err.running());

    write_file(go, "");
    wait_for(
        [&] {
            return sorted_lines("f.out") ==
                       std::vector<std::string>{"first", "first-err", "second", "second-err"} &&
                   read_file(dir.file("e.out")) == "first-err\nsecond-err\n";
        },
        10s, "the new lines followed", shown);
    CHECK(follow.running());
    CHECK(follow_err.running());

    follow.signal(SIGINT);
    follow_err.signal(SIGINT);
    const auto code = follow.wait_exit(5s);
    const auto code_err = follow_err.wait_exit(5s);
    INFO(shown());
    REQUIRE_MESSAGE(code.has_value(), "pkitctl logs -f still running 5 s after SIGINT");
    REQUIRE_MESSAGE(code_err.has_value(), "pkitctl logs -f --stream still running after SIGINT");
    CHECK(*code == 0);
    CHECK(*code_err == 0);
    CHECK(read_file(dir.file("f.err")).empty());
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ctl commands: pkitctl reload exits 0 and names what was added, removed and changed") {
    TempDir dir;
    dir.service("keep", sh_command("exec sleep 1000"));
    dir.service("change", sh_command("exec sleep 1000"));
    dir.service("remove", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    for (const auto* name : {"keep", "change", "remove"}) {
        wait_status(client, name, state_is("running"), 5s, std::string(name) + " running");
    }

    dir.service("change", sh_command("exec sleep 1001"));
    fs::remove(dir.path() / "services" / "remove.toml");
    dir.service("add", sh_command("exec sleep 1000"));
    dir.service("add2", sh_command("exec sleep 1000"));

    auto reloaded = ctl(pkitd, {"reload"});
    INFO("reload:\n" << reloaded.all());
    CHECK(reloaded.exit_code == 0);
    CHECK(reloaded.out ==
          "reloaded; added: add, add2; removed: remove; changed: change; "
          "1 unchanged\n");
    wait_status(client, "add", state_is("running"), 5s, "the added service runs");

    // Nothing changed since: only the count.
    auto again = ctl(pkitd, {"reload"});
    CHECK_MESSAGE(again.exit_code == 0, again.all());
    CHECK(again.out == "reloaded; 4 unchanged\n");

    auto as_json = ctl(pkitd, {"--json", "reload"});
    CHECK_MESSAGE(as_json.exit_code == 0, as_json.all());
    json parsed = json::parse(as_json.out, nullptr, false);
    REQUIRE_MESSAGE(parsed.is_object(), as_json.out);
    CHECK(parsed["added"].empty());
    CHECK(parsed["removed"].empty());
    CHECK(parsed["changed"].empty());
    CHECK(parsed["unchanged"] == 4);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ctl commands: pkitctl exits 4 when no reply comes within --timeout") {
    TempDir dir;
    const std::string path = dir.file("mute.sock");
    RawSocket mute(path, true);  // connects succeed (the backlog), nothing ever answers

    const auto start = Clock::now();
    auto result = run_ctl({"--socket", path, "--timeout", "0.3", "status"}, 20s);
    const double elapsed = seconds_since(start);
    INFO("after " << elapsed << " s:\n" << result.all());
    CHECK_FALSE(result.timed_out);
    CHECK(result.exit_code == 4);
    CHECK(result.err == "pkitctl: no reply from " + path + " within 0.3s\n");
    CHECK(elapsed >= 0.3);
    CHECK(elapsed < 10.0);  // bounded by --timeout, not the 10 s default

    // The option may come after the command too, and must be positive.
    auto late = run_ctl({"--socket", path, "status", "--timeout", "0.2"}, 20s);
    CHECK_MESSAGE(late.exit_code == 4, late.all());
    CHECK(late.err.find("within 0.2s") != std::string::npos);
    CHECK(run_ctl({"--socket", path, "--timeout", "0", "status"}).exit_code == 2);
    CHECK(run_ctl({"--socket", path, "--timeout", "-1", "status"}).exit_code == 2);
}

TEST_CASE("ctl commands: a missing socket exits 4 with the path and the reason") {
    TempDir dir;
    const std::string missing = dir.file("nobody-home.sock");
    auto result = run_ctl({"--socket", missing, "status"});
    CHECK(result.exit_code == 4);
    CHECK(result.out.empty());
    CHECK(result.err.starts_with("pkitctl: cannot connect to " + missing +
                                 " (--socket): no such file (is pkitd running?); name the "
                                 "socket with --socket PATH"));

    // A socket file nobody listens on any more: refused, said so.
    const std::string stale = dir.file("stale.sock");
    { RawSocket bound(stale, false); }
    REQUIRE(fs::exists(stale));
    auto refused = run_ctl({"--socket", stale, "status"});
    CHECK(refused.exit_code == 4);
    CHECK_MESSAGE(
        refused.err.find(stale + " (--socket): nothing listens on it") != std::string::npos,
        refused.err);

    // Every command, not only status, reports the same way.
    for (const std::vector<std::string>& command :
         std::vector<std::vector<std::string>>{{"stop", "--all"},
                                               {"logs", "svc"},
                                               {"signal", "svc", "HUP"},
                                               {"reload"},
                                               {"reload", "--dry-run"},
                                               {"upgrade"},
                                               {"shutdown"},
                                               {"events"},
                                               {"explain", "svc"}}) {
        std::vector<std::string> args{"--socket", missing};
        args.insert(args.end(), command.begin(), command.end());
        auto r = run_ctl(args);
        CHECK_MESSAGE(r.exit_code == 4, command[0] << ": " << r.all());
        CHECK_MESSAGE(r.err.find(missing + " (--socket): no such file") != std::string::npos,
                      command[0] << ": " << r.err);
    }
}
