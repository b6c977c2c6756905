// Upgrading pkitd in place (SPEC §16): `pkitctl upgrade` to the same binary keeps
// every service's process, state, counters and tails; clients connecting throughout
// are never refused; a binary that fails its check, or a configuration changed on
// disk, changes nothing; a state that cannot be read leaves no service unsupervised.

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// A service in each state worth carrying: running with output (and half a line),
// backoff with a long delay, stopped by the operator, a finished oneshot, failed.
void five_states(TempDir& dir) {
    dir.service("web", sh_command("echo one; echo two >&2; printf half; exec sleep 1000"));
    dir.service("flaky", sh_command("echo crash; exit 3") + restart_table("always", "8s"));
    dir.service("idle", runner_toml());
    dir.service("job", "type = \"oneshot\"\n" + sh_command("echo did it"));
    dir.service("broken", sh_command("exit 1") + restart_table("on_crash", "100ms", 2.0, 0));
}

void settle_five_states(Daemon& pkitd) {
    Client client = pkitd.client();
    wait_running(client, "web");
    wait_status(client, "flaky", state_is("backoff"), 10s, "flaky backs off");
    wait_running(client, "idle");
    client.request({{"cmd", "stop"}, {"services", {"idle"}}});
    wait_status(client, "job", state_is("done"), 10s, "the job is done");
    wait_status(client, "broken", state_is("failed"), 10s, "broken fails");
}

// The status of every service without what the clock moves.
json steady_status(Client& client) {
    json services = client.command("status")["result"]["services"];
    for (json& s : services) {
        s.erase("uptime");
        s.erase("next_restart_in");
    }
    return services;
}

json logs_of(Client& client, const std::string& name, bool previous = false) {
    return client.request({{"cmd", "logs"}, {"service", name}, {"previous", previous}})["result"];
}

CommandResult upgrade(const Daemon& pkitd, std::vector<std::string> more = {}) {
    std::vector<std::string> args{"upgrade"};
    args.insert(args.end(), more.begin(), more.end());
    return ctl(pkitd, args, 40s);
}

}  // namespace

TEST_CASE("an upgrade to the same binary keeps every service, pid, counter and tail") {
    TempDir dir;
    five_states(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    settle_five_states(pkitd);
    Client client = pkitd.client();
    // Part of flaky's 8 s backoff has passed: a deadline made afresh at the resume
    // would show more left than that.
    wait_status(
        client, "flaky",
        [](const json& s) {
            return s["next_restart_in"].is_number() && s["next_restart_in"].get<double>() < 6.5;
        },
        15s, "flaky's backoff is under way");
    const json before = steady_status(client);
    const json web_logs = logs_of(client, "web");
    const json flaky_logs = logs_of(client, "flaky");
    const json pid_before = client.command("ping")["result"]["pid"];
    const double flaky_exit_at = status(client, "flaky")["last_exit"]["at"].get<double>();
    // A streaming client is closed at the exec.
    Client events = pkitd.client();
    REQUIRE(events.request({{"cmd", "events"}})["ok"] == true);

    CommandResult done = upgrade(pkitd);
    REQUIRE_MESSAGE(done.exit_code == 0, done.all() << pkitd.log());
    CHECK(done.out.find("upgraded pkitd") != std::string::npos);

    Client after = pkitd.client();
    CHECK(after.command("ping")["result"]["pid"] == pid_before);
    CHECK(steady_status(after) == before);
    CHECK(logs_of(after, "web") == web_logs);
    CHECK(logs_of(after, "flaky") == flaky_logs);
    CHECK(pkitd.log().find("upgraded from ") != std::string::npos);
    while (events.read_line(Clock::now() + 10s)) {
    }
    CHECK(events.eof());

    // The backoff ends when it would have without the upgrade: 8 s after the exit, not
    // 8 s after the resume, and not at once.
    const json left = status(after, "flaky")["next_restart_in"];
    REQUIRE(left.is_number());
    CHECK(left.get<double>() < 6.5);
    json restarted = wait_status(after, "flaky", run_at_least(2), 15s, "flaky restarts");
    CHECK(restarted["started_at"].get<double>() - flaky_exit_at >= 7.9);
    // The next crash counts on from the carried counters.
    wait_status(
        after, "flaky", [](const json& s) { return s.value("restarts", 0) >= 2; }, 15s,
        "flaky's second restart is counted");
    // The half line written before the upgrade ends the tail once the run ends.
    kill_service(after, "web");
    wait_running(after, "web", 2);
    CHECK(status(after, "web")["restarts"] == 1);
    json previous = logs_of(after, "web", true);
    REQUIRE(previous["lines"].size() == 3);
    CHECK(previous["lines"][2]["text"] == "half");

    // A second upgrade right after the first.
    CommandResult again = upgrade(pkitd);
    CHECK_MESSAGE(again.exit_code == 0, again.all() << pkitd.log());
    Client third = pkitd.client();
    CHECK(third.command("ping")["result"]["pid"] == pid_before);
    CHECK(status(third, "web")["run"] == 2);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a client connecting in a loop through an upgrade is never refused") {
    TempDir dir;
    dir.service("web", runner_toml());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    const json pid = wait_running(client, "web")["pid"];

    std::atomic<bool> stop{false};
    std::atomic<int> refused{0};
    std::atomic<int> answered{0};
    std::thread prober([&] {
        while (!stop) {
            int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            sockaddr_un address{};
            address.sun_family = AF_UNIX;
            std::snprintf(address.sun_path, sizeof address.sun_path, "%s", pkitd.socket().c_str());
            if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
                ++refused;
            } else {
                const char ping[] = "{\"id\":1,\"cmd\":\"ping\"}\n";
                char reply[512];
                if (::write(fd, ping, sizeof ping - 1) > 0 && ::read(fd, reply, sizeof reply) > 0) {
                    ++answered;
                }
            }
            ::close(fd);
        }
    });
    for (int i = 0; i < 3; ++i) {
        CommandResult done = upgrade(pkitd);
        CHECK_MESSAGE(done.exit_code == 0, done.all() << pkitd.log());
    }
    stop = true;
    prober.join();
    CHECK(refused == 0);
    CHECK(answered > 0);
    Client after = pkitd.client();
    CHECK(status(after, "web")["pid"] == pid);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("an upgrade to a binary that fails its check changes nothing") {
    TempDir dir;
    dir.service("web", runner_toml());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    const json pid = wait_running(client, "web")["pid"];
    write_file(dir.file("other-format"), "#!/bin/sh\necho pkitd 9.0.0\necho state-format 1\n");
    ::chmod(dir.file("other-format").c_str(), 0755);
    write_file(dir.file("silent"), "#!/bin/sh\nexit 0\n");
    ::chmod(dir.file("silent").c_str(), 0755);
    write_file(dir.file("not-executable"), "#!/bin/sh\n");
    const std::vector<std::pair<std::string, std::string>> cases{
        {dir.file("missing"), "No such file or directory"},
        {dir.file("not-executable"), "is not an executable file"},
        {"/bin/false", "--upgrade-check exited 1"},
        {dir.file("other-format"), "does not read state format 2"},
        {dir.file("silent"), "did not say which pkitd it is"},
        {"relative/pkitd", "must be an absolute path"},
    };
    for (const auto& [binary, why] : cases) {
        CAPTURE(binary);
        CommandResult refused = upgrade(pkitd, {"--binary", binary});
        CHECK(refused.exit_code == 1);
        CHECK_MESSAGE(refused.err.find(why) != std::string::npos, refused.all());
    }
    Client after = pkitd.client();
    CHECK(status(after, "web")["pid"] == pid);
    CHECK(status(after, "web")["run"] == 1);
    CHECK(pkitd.log().find("upgraded from") == std::string::npos);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("an upgrade is refused while the configuration on disk differs or pkitd shuts down") {
    TempDir dir;
    dir.service("web", runner_toml());
    dir.service("slow", sh_command("exec sleep 1000") +
                            "[stop]\nsignal = \"SIGWINCH\"\ntimeout = \"30s\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_running(client, "slow");
    dir.service("web", runner_toml("999"));
    CommandResult changed = upgrade(pkitd);
    CHECK(changed.exit_code == 1);
    CHECK_MESSAGE(changed.err.find("reload first, then upgrade") != std::string::npos,
                  changed.all());
    CHECK(status(client, "web")["run"] == 1);

    reload(client);
    wait_running(client, "web", 2);
    CommandResult reloaded = upgrade(pkitd);
    CHECK_MESSAGE(reloaded.exit_code == 0, reloaded.all() << pkitd.log());

    Client again = pkitd.client();
    again.command("shutdown");
    CommandResult during = upgrade(pkitd);
    CHECK(during.exit_code == 1);
    CHECK_MESSAGE(during.err.find("shutting down") != std::string::npos, during.all());
    pkitd.signal(SIGTERM);  // the second signal ends the 30 s stop
    pkitd.wait_exit(15s);
}

TEST_CASE("a state that cannot be read ends the old runs and starts each service once") {
    TempDir dir;
    for (const char* name : {"a", "b", "c"}) {
        dir.service(name, sh_command("exec sleep 1001") + "[stop]\ntimeout = \"2s\"\n");
    }
    Daemon first(dir);
    first.wait_ready();
    Client client = first.client();
    for (const char* name : {"a", "b", "c"}) {
        wait_running(client, name);
    }
    first.signal(SIGKILL);
    REQUIRE(first.wait_exit(10s) == 128 + SIGKILL);

    // A state cut short, as from a crash during the hand-over, in descriptor 40.
    write_file(dir.file("state"), "{\"format\":\"pkit-state\",\"version\":1,\"core\":{\"serv");
    int fd = ::open(dir.file("state").c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    REQUIRE(::dup2(fd, 40) == 40);
    ::close(fd);
    Daemon second(dir, {.extra_args = {"--resume", "40"}});
    ::close(40);
    second.wait_ready();
    Client after = second.client();
    for (const char* name : {"a", "b", "c"}) {
        wait_running(after, name);
    }
    CHECK(second.log().find("cannot resume from the state") != std::string::npos);
    wait_for(
        [&] {
            int mains = 0;
            for (const ProcInfo& p : marker_processes(dir.str())) {
                mains += p.cmdline == "sleep 1001" ? 1 : 0;
            }
            return mains == 3;
        },
        10s, "each service runs once", [&] { return describe(marker_processes(dir.str())); });
    CHECK(second.stop() == 0);
}

TEST_CASE("as PID 1 of a namespace pkitd upgrades in place and stays PID 1") {
    const std::string reason = pid_namespace_unavailable();
    if (!reason.empty()) {
        PKIT_SKIP(reason);
    }
    TempDir dir;
    dir.service("web", runner_toml());
    Daemon pkitd(dir, {.wrapper = pid_namespace_wrapper()});
    pkitd.wait_ready();
    Client client = pkitd.client();
    const json pid = wait_running(client, "web")["pid"];
    CHECK(client.command("ping")["result"]["pid"] == 1);
    CommandResult done = upgrade(pkitd);
    REQUIRE_MESSAGE(done.exit_code == 0, done.all() << pkitd.log());
    Client after = pkitd.client();
    CHECK(after.command("ping")["result"]["pid"] == 1);
    CHECK(status(after, "web")["pid"] == pid);
    pkitd.signal(SIGTERM);
    CHECK(pkitd.wait_exit(15s) == 0);
}

TEST_CASE("an upgrade keeps a scheduled job's count of missed ticks and its grid of ticks") {
    TempDir dir;
    // Each episode lasts 1.5 s: every other tick comes during one and is missed.
    dir.service("tick", "type = \"oneshot\"\nschedule = \"every 1s\"\n" + sh_command("sleep 1.5"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json before = wait_status(
        client, "tick",
        [](const json& s) {
            return s["schedule"].is_object() && s["schedule"].value("missed", 0) >= 2 &&
                   s["schedule"]["next"].is_number();
        },
        20s, "two ticks missed")["schedule"];

    CommandResult done = upgrade(pkitd);
    REQUIRE_MESSAGE(done.exit_code == 0, done.all() << pkitd.log());
    Client after = pkitd.client();
    json carried = status(after, "tick")["schedule"];
    CHECK(carried.value("missed", 0) >= before.value("missed", 0));
    REQUIRE(carried["next"].is_number());
    // "every" ticks stay on the grid of pkitd's first start, not the upgrade's.
    const double steps = carried["next"].get<double>() - before["next"].get<double>();
    CHECK(std::abs(steps - std::round(steps)) < 0.05);
    wait_status(
        after, "tick",
        [&](const json& s) {
            return s["schedule"].value("missed", 0) > carried.value("missed", 0);
        },
        10s, "ticks are still counted after the upgrade");
    CHECK(pkitd.stop() == 0);
}
