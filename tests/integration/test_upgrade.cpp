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
    write_file(dir.file("other-format"), "#!/bin/sh\necho pkitd 9.0.0\necho state-format 1 99\n");
    ::chmod(dir.file("other-format").c_str(), 0755);
    write_file(dir.file("silent"), "#!/bin/sh\nexit 0\n");
    ::chmod(dir.file("silent").c_str(), 0755);
    write_file(dir.file("not-executable"), "#!/bin/sh\n");
    const std::vector<std::pair<std::string, std::string>> cases{
        {dir.file("missing"), "No such file or directory"},
        {dir.file("not-executable"), "is not an executable file"},
        {"/bin/false", "--upgrade-check exited 1"},
        {dir.file("other-format"), "does not read state format 4 or 3 or 2"},
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

TEST_CASE(
    "an upgrade is refused while the configuration on disk differs, a roll is under way or pkitd "
    "shuts down") {
    TempDir dir;
    dir.service("web", runner_toml());
    dir.service("slow", sh_command("exec sleep 1000") +
                            "[stop]\nsignal = \"SIGWINCH\"\ntimeout = \"30s\"\n");
    // Ready only while DIR/ready exists.
    const std::string ready_flag = dir.file("ready");
    write_file(ready_flag, "");
    for (const char* name : {"r1", "r2"}) {
        dir.service(name, runner_toml(name[1] == '1' ? "1001" : "1002") +
                              "[ready]\nexec = [\"test\", \"-f\", " + toml_str(ready_flag) +
                              "]\ninterval = \"100ms\"\ntimeout = \"60s\"\n");
    }
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

    // A rolling restart's client waits for its end on a connection the exec would
    // close: refused until the roll is through.
    Client roller = pkitd.client();
    wait_status(roller, "r1", state_is("running"), 10s, "r1 is ready");
    wait_status(roller, "r2", state_is("running"), 10s, "r2 is ready");
    fs::remove(ready_flag);
    roller.send_raw(
        "{\"id\":7,\"cmd\":\"restart\",\"services\":[\"r1\",\"r2\"],"
        "\"rolling\":true}\n");
    Client watcher = pkitd.client();
    wait_status(
        watcher, "r1", [](const json& s) { return s["run"] == 2 && s["state"] == "starting"; }, 15s,
        "r1's new run waits to be ready");
    CommandResult rolling = upgrade(pkitd);
    CHECK(rolling.exit_code == 1);
    CHECK_MESSAGE(
        rolling.err.find("a rolling restart is in progress (1 of 2: r1)") != std::string::npos,
        rolling.all());
    CHECK(status(watcher, "r2")["run"] == 1);
    write_file(ready_flag, "");
    std::optional<json> rolled = roller.read_json(Clock::now() + 20s);
    REQUIRE(rolled.has_value());
    CHECK_MESSAGE((*rolled)["ok"] == true, rolled->dump());
    CHECK(status(watcher, "r2")["run"] == 2);
    CommandResult after_roll = upgrade(pkitd);
    CHECK_MESSAGE(after_roll.exit_code == 0, after_roll.all() << pkitd.log());

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

TEST_CASE(
    "an upgrade carries a storm pause, a ready deadline, a health streak and closes logs -f") {
    TempDir dir;
    // The first crash trips the storm guard: the restart waits 6 s, not 50 ms.
    dir.service("paused", sh_command("echo crashing; exit 1") + restart_table("on_crash", "50ms") +
                              "[storm]\nthreshold = 1.0\npause = \"6s\"\n");
    // Never ready: stopped as a crash 5 s after its start.
    dir.service("slow", sh_command("exec sleep 1000") + restart_table("on_crash", "100ms") +
                            "[ready]\nexec = [\"false\"]\ninterval = \"100ms\"\n"
                            "timeout = \"5s\"\n");
    // Every liveness probe fails; the streak never reaches `failures` here.
    dir.service("sick", sh_command("echo sick; exec sleep 1000") +
                            restart_table("on_crash", "100ms") +
                            "[health]\nexec = [\"false\"]\ninterval = \"200ms\"\n"
                            "failures = 100000\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    const json paused =
        wait_status(client, "paused", state_is("storm_pause"), 10s, "a storm pause");
    CHECK(paused["storm_pauses"] == 1);
    CHECK(paused["restarts"] == 1);  // counted when decided
    const json sick = wait_status(
        client, "sick",
        [](const json& s) {
            return s["health"].is_object() && s["health"]["status"] == "unhealthy" &&
                   s["health"].value("failures", 0) >= 3;
        },
        10s, "sick has a streak of failed probes");
    // 2.5 s of slow's 5 s ready timeout have passed: a deadline made afresh at the
    // resume would stop it 7.5 s after its start or later.
    const json slow = wait_status(client, "slow", state_is("starting"), 10s, "slow is starting");
    const double slow_started = slow["started_at"].get<double>();
    wait_for(
        [&] {
            return std::chrono::duration<double>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count() >= slow_started + 2.5;
        },
        10s, "half of slow's ready timeout has passed");
    const double paused_exit_at = last_exit(paused)["at"].get<double>();
    const json before = steady_status(client);
    const int streak = status(client, "sick")["health"]["failures"].get<int>();
    (void)sick;
    // A `logs -f` client sees the tail, then is closed at the exec.
    Client follower = pkitd.client();
    REQUIRE(follower.request({{"cmd", "logs"}, {"service", "sick"}, {"follow", true}})["ok"] ==
            true);

    CommandResult done = upgrade(pkitd);
    REQUIRE_MESSAGE(done.exit_code == 0, done.all() << pkitd.log());
    while (follower.read_line(Clock::now() + 10s)) {
    }
    CHECK(follower.eof());

    Client after = pkitd.client();
    // Equal apart from what the clock moves, and the streak, which only grows.
    json now = steady_status(after);
    const json sick_after = status(after, "sick");
    REQUIRE(sick_after["health"].is_object());
    CHECK(sick_after["health"]["status"] == "unhealthy");
    CHECK(sick_after["health"]["failures"].get<int>() >= streak);
    json before_cmp = before;
    for (json* side : {&now, &before_cmp}) {
        for (json& s : *side) {
            s.erase("health");
        }
    }
    CHECK(now == before_cmp);

    // paused's 6 s began at its crash, 2.5 s or more ago: a pause made afresh at the
    // resume would have 6 s left.
    const json paused_left = status(after, "paused")["next_restart_in"];
    REQUIRE(paused_left.is_number());
    CHECK(paused_left.get<double>() < 5.0);

    // slow's deadline fires when it would have: 5 s after its start.
    json slow_after = wait_status(
        after, "slow", [](const json& s) { return s["last_exit"].is_object(); }, 15s,
        "slow misses its ready timeout");
    CHECK(last_exit(slow_after)["killed_by"] == "ready_timeout");
    const double slow_lived = last_exit(slow_after)["duration"].get<double>();
    CHECK(slow_lived >= 4.9);
    CHECK(slow_lived < 7.0);
    // ...and its restart counts on from the carried counters.
    slow_after = wait_status(after, "slow", run_at_least(2), 10s, "slow restarts");
    CHECK(slow_after["restarts"] == 1);

    // paused restarts 6 s after its crash, then crashes and pauses once more: its second.
    json paused_after = wait_status(after, "paused", run_at_least(2), 15s, "paused restarts");
    CHECK(paused_after["started_at"].get<double>() - paused_exit_at >= 5.9);
    paused_after = wait_status(
        after, "paused", [](const json& s) { return s["state"] == "storm_pause" && s["run"] == 2; },
        10s, "paused pauses again");
    CHECK(paused_after["storm_pauses"] == 2);
    CHECK(paused_after["restarts"] == 2);

    // The streak goes on growing over the same run.
    wait_status(
        after, "sick", [&](const json& s) { return s["health"].value("failures", 0) > streak + 2; },
        10s, "sick's streak grows on");
    CHECK(status(after, "sick")["run"] == 1);
    CHECK(pkitd.stop() == 0);
}
