// pause and resume (SPEC §15) on real cgroups, each pkitd in a delegated cgroup the case
// makes (harness_cgroup.hpp): a paused service's processes are frozen (cgroup.events
// `frozen 1`; a counter it writes stops) and its probes stop; resume thaws it; a stop,
// a kill from outside and pkitd's shutdown all end a paused run; NAME means every
// instance; and without cgroups both commands fail with `unsupported`. Needs root and a
// writable cgroup v2 hierarchy; skipped with the reason elsewhere.

#include <signal.h>
#include <unistd.h>

#include "tests/integration/harness.hpp"
#include "tests/integration/harness_cgroup.hpp"

using namespace pkit::itest;

namespace {

#define NEED_PAUSE_CGROUP(name)               \
    std::string why_##name;                   \
    auto name = TestCgroup::make(why_##name); \
    if (!name) {                              \
        PKIT_SKIP(why_##name);                \
    }

// A service that counts, writing the count to FILE every 50 ms.
std::string counter(const TempDir& dir, const std::string& file) {
    const std::string path = dir.file(file);
    return sh_command("i=0; while :; do i=$((i+1)); echo $i > " + path + ".tmp; mv " + path +
                      ".tmp " + path + "; sleep 0.05; done");
}

long count_in(const TempDir& dir, const std::string& file) {
    std::string text = read_file(dir.file(file));
    return text.empty() ? 0 : std::stol(text);
}

// Waits until FILE's count has grown by `by` from now: time has passed for a process
// that is not frozen.
void count_grows(const TempDir& dir, const std::string& file, long by) {
    wait_file(dir.file(file));
    const long from = count_in(dir, file);
    wait_for([&] { return count_in(dir, file) >= from + by; }, 10s,
             file + " grows by " + std::to_string(by),
             [&] { return std::to_string(count_in(dir, file)); });
}

bool events_say(const TestCgroup& cg, const std::string& name, const std::string& line) {
    return ("\n" + cg.read(name, "cgroup.events")).find("\n" + line + "\n") != std::string::npos;
}

std::size_t probe_lines(const TempDir& dir, const std::string& file) {
    return fs::exists(dir.file(file)) ? read_lines(dir.file(file)).size() : 0;
}

json pause_request(Client& client, const std::string& cmd, const std::vector<std::string>& names) {
    return client.request({{"cmd", cmd}, {"services", names}});
}

}  // namespace

TEST_CASE("pause freezes a service's cgroup and holds its probes; resume thaws it") {
    NEED_PAUSE_CGROUP(cg);
    TempDir dir;
    dir.service("web", counter(dir, "web-count") + "[health]\nexec = [\"/bin/sh\", \"-c\", " +
                           toml_str("echo probe >> " + dir.file("probes")) +
                           "]\ninterval = \"100ms\"\nfailures = 1\n");
    dir.service("clock", counter(dir, "clock-count"));  // a witness that time passes
    Daemon pkitd(dir, {.cgroup = cg->path()});
    pkitd.wait_ready();
    Client client = pkitd.client();
    const json web = wait_running(client, "web");
    count_grows(dir, "web-count", 2);
    wait_for([&] { return probe_lines(dir, "probes") >= 2; }, 10s, "two probes ran");

    CommandResult paused = ctl(pkitd, {"pause", "web"});
    CHECK_MESSAGE(paused.exit_code == 0, paused.all());
    CHECK(paused.out.find("paused") != std::string::npos);
    CHECK(status(client, "web")["state"] == "paused");
    CHECK(status(client, "web")["pid"] == web["pid"]);
    wait_for([&] { return events_say(*cg, "web", "frozen 1"); }, 10s, "web's cgroup is frozen",
             [&] { return cg->read("web", "cgroup.events"); });
    CHECK(cg->read("web", "cgroup.freeze").starts_with("1"));
    // A probe under way at the pause may still finish: counted once the witness moved.
    count_grows(dir, "clock-count", 3);
    const long frozen_at = count_in(dir, "web-count");
    const std::size_t probes_at = probe_lines(dir, "probes");
    count_grows(dir, "clock-count", 10);  // half a second and more
    CHECK(count_in(dir, "web-count") == frozen_at);
    CHECK(probe_lines(dir, "probes") == probes_at);
    CHECK(status(client, "web")["state"] == "paused");
    CHECK(status(client, "web")["health"]["failures"] == 0);

    // Seen by status (table and --state), explain and pkitd's readiness.
    CommandResult table = ctl(pkitd, {"status", "--state", "paused"});
    CHECK(table.out.find("web") != std::string::npos);
    CHECK(table.out.find("clock") == std::string::npos);
    CommandResult why = ctl(pkitd, {"explain", "web"});
    CHECK_MESSAGE(why.out.find("paused by the operator since") != std::string::npos, why.all());
    CHECK(client.command("health")["result"]["ready"] == false);
    // Pausing again changes nothing and succeeds.
    CHECK(pause_request(client, "pause", {"web"})["ok"] == true);

    CommandResult resumed = ctl(pkitd, {"resume", "web"});
    CHECK_MESSAGE(resumed.exit_code == 0, resumed.all());
    CHECK(status(client, "web")["state"] == "running");
    wait_for([&] { return events_say(*cg, "web", "frozen 0"); }, 10s, "web's cgroup is thawed",
             [&] { return cg->read("web", "cgroup.events"); });
    count_grows(dir, "web-count", 3);
    wait_for([&] { return probe_lines(dir, "probes") >= probes_at + 2; }, 10s, "probes run again");
    CHECK(status(client, "web")["pid"] == web["pid"]);
    CHECK(status(client, "web")["run"] == 1);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a stop of a paused service thaws it: its run acts on the stop signal and ends") {
    NEED_PAUSE_CGROUP(cg);
    TempDir dir;
    // It ends on SIGTERM, saying so; a frozen run could not, until the SIGKILL 60 s on.
    dir.service("web", sh_command("trap 'touch " + dir.file("got-term") +
                                  "; exit 0' TERM; while :; do sleep 0.05; done") +
                           "[stop]\ntimeout = \"60s\"\n");
    Daemon pkitd(dir, {.cgroup = cg->path()});
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_running(client, "web");
    CHECK(ctl(pkitd, {"pause", "web"}).exit_code == 0);
    wait_for([&] { return events_say(*cg, "web", "frozen 1"); }, 10s, "web's cgroup is frozen");

    CommandResult stopped = ctl(pkitd, {"stop", "web"});
    CHECK_MESSAGE(stopped.exit_code == 0, stopped.all());
    json web = status(client, "web");
    CHECK(web["state"] == "stopped");
    CHECK(web["last_exit"]["code"] == 0);
    CHECK(web["last_exit"]["killed_by"] == "operator");
    CHECK(fs::exists(dir.file("got-term")));
    CHECK_FALSE(cg->populated("web"));
    CHECK(events_say(*cg, "web", "frozen 0"));
    // A stopped service has no run to pause.
    json refused = pause_request(client, "pause", {"web"});
    CHECK(refused["ok"] == false);
    CHECK(refused["error"]["code"] == "not_running");
    CHECK(refused["error"]["message"].get<std::string>().find("\"web\" is stopped") !=
          std::string::npos);
    CommandResult cli = ctl(pkitd, {"pause", "web"});
    CHECK(cli.exit_code == 1);
    CHECK(cli.err.find("\"web\" is stopped") != std::string::npos);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a paused run killed from outside is handled as any exit; the next run is not frozen") {
    NEED_PAUSE_CGROUP(cg);
    TempDir dir;
    dir.service("web", counter(dir, "web-count") + restart_table("always", "100ms"));
    Daemon pkitd(dir, {.cgroup = cg->path()});
    pkitd.wait_ready();
    Client client = pkitd.client();
    const pid_t pid = wait_running(client, "web")["pid"].get<pid_t>();
    CHECK(ctl(pkitd, {"pause", "web"}).exit_code == 0);
    wait_for([&] { return events_say(*cg, "web", "frozen 1"); }, 10s, "web's cgroup is frozen");

    REQUIRE(::kill(pid, SIGKILL) == 0);
    json next = wait_status(
        client, "web", [](const json& s) { return s["state"] == "running" && s["run"] == 2; }, 10s,
        "run 2 running");
    CHECK(next["restarts"] == 1);
    CHECK(next["last_exit"]["signal"] == "SIGKILL");
    CHECK(events_say(*cg, "web", "frozen 0"));
    count_grows(dir, "web-count", 3);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("pause NAME freezes every instance, NAME@I one; shutdown ends paused runs") {
    NEED_PAUSE_CGROUP(cg);
    TempDir dir;
    // Each instance ends on SIGTERM, saying so; frozen, it could not until the SIGKILL.
    dir.service("web", sh_command("trap 'touch " + dir.file("term-") +
                                  "$PKIT_INSTANCE; exit 0' TERM; while :; do sleep 0.05; done") +
                           "instances = 2\n[stop]\ntimeout = \"60s\"\n");
    Daemon pkitd(dir, {.cgroup = cg->path()});
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_running(client, "web@1");
    const pid_t second = wait_running(client, "web@2")["pid"].get<pid_t>();

    json one = pause_request(client, "pause", {"web@2"});
    REQUIRE(one["ok"] == true);
    CHECK(one["result"]["services"].size() == 1);
    CHECK(status(client, "web@2")["state"] == "paused");
    CHECK(status(client, "web@1")["state"] == "running");
    wait_for([&] { return events_say(*cg, "web@2", "frozen 1"); }, 10s, "web@2 is frozen");
    CHECK(events_say(*cg, "web@1", "frozen 0"));

    json both = pause_request(client, "pause", {"web"});
    REQUIRE(both["ok"] == true);
    CHECK(both["result"]["services"].size() == 2);
    CHECK(status(client, "web@1")["state"] == "paused");
    json all = client.request({{"cmd", "resume"}, {"all", true}});
    REQUIRE(all["ok"] == true);
    CHECK(status(client, "web@1")["state"] == "running");
    CHECK(status(client, "web@2")["state"] == "running");
    CHECK(pause_request(client, "pause", {"web"})["ok"] == true);

    // The shutdown thaws the frozen runs before their stop signal, which they act on.
    CHECK(pkitd.stop() == 0);
    CHECK(fs::exists(dir.file("term-1")));
    CHECK(fs::exists(dir.file("term-2")));
    CHECK_FALSE(pid_alive(second));
    CHECK_FALSE(fs::exists(cg->path() + "/web@2"));
}

TEST_CASE("pause and resume without cgroups fail with unsupported and the reason") {
    TempDir dir;
    dir.daemon_config("cgroups = \"off\"\n");
    dir.service("web", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_running(client, "web");
    for (const char* cmd : {"pause", "resume"}) {
        CAPTURE(cmd);
        json reply = pause_request(client, cmd, {"web"});
        CHECK(reply["ok"] == false);
        CHECK(reply["error"]["code"] == "unsupported");
        CHECK(reply["error"]["message"].get<std::string>().find("cgroups = \"off\"") !=
              std::string::npos);
        CommandResult cli = ctl(pkitd, {cmd, "web"});
        CHECK(cli.exit_code == 1);
        CHECK_MESSAGE(cli.err.find("pkitd uses no cgroups") != std::string::npos, cli.all());
    }
    CHECK(status(client, "web")["state"] == "running");
    // Unknown names are refused first, as for every command.
    CHECK(pause_request(client, "pause", {"wbe"})["error"]["code"] == "unknown_service");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a reload leaves an unchanged paused service paused, and restarts a changed one thawed") {
    NEED_PAUSE_CGROUP(cg);
    TempDir dir;
    dir.service("web", counter(dir, "web-count"));
    Daemon pkitd(dir, {.cgroup = cg->path()});
    pkitd.wait_ready();
    Client client = pkitd.client();
    const json first = wait_running(client, "web");
    CHECK(ctl(pkitd, {"pause", "web"}).exit_code == 0);
    wait_for([&] { return events_say(*cg, "web", "frozen 1"); }, 10s, "web's cgroup is frozen");

    CommandResult same = ctl(pkitd, {"reload"});
    CHECK_MESSAGE(same.exit_code == 0, same.all());
    json web = status(client, "web");
    CHECK(web["state"] == "paused");
    CHECK(web["pid"] == first["pid"]);
    CHECK(events_say(*cg, "web", "frozen 1"));

    dir.service("web", counter(dir, "web-count") + "[stop]\ntimeout = \"30s\"\n");
    CommandResult changed = ctl(pkitd, {"reload"});
    CHECK_MESSAGE(changed.exit_code == 0, changed.all());
    json next = wait_status(
        client, "web", [](const json& s) { return s["state"] == "running" && s["run"] == 2; }, 10s,
        "run 2 running");
    CHECK(next["last_exit"]["killed_by"] == "operator");
    CHECK(events_say(*cg, "web", "frozen 0"));
    count_grows(dir, "web-count", 3);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("an upgrade in place hands a paused service over paused, its cgroup still frozen") {
    NEED_PAUSE_CGROUP(cg);
    TempDir dir;
    dir.service("web", counter(dir, "web-count"));
    Daemon pkitd(dir, {.cgroup = cg->path()});
    pkitd.wait_ready();
    Client client = pkitd.client();
    const json first = wait_running(client, "web");
    CHECK(ctl(pkitd, {"pause", "web"}).exit_code == 0);
    wait_for([&] { return events_say(*cg, "web", "frozen 1"); }, 10s, "web's cgroup is frozen");

    CommandResult done = ctl(pkitd, {"upgrade"}, 40s);
    REQUIRE_MESSAGE(done.exit_code == 0, done.all() << pkitd.log());
    Client after = pkitd.client();
    json web = status(after, "web");
    CHECK(web["state"] == "paused");
    CHECK(web["pid"] == first["pid"]);
    CHECK(events_say(*cg, "web", "frozen 1"));
    CHECK(after.request({{"cmd", "explain"}, {"service", "web"}})["result"]["text"]
              .get<std::string>()
              .find("paused by the operator since") != std::string::npos);

    CHECK(ctl(pkitd, {"resume", "web"}).exit_code == 0);
    CHECK(status(after, "web")["state"] == "running");
    count_grows(dir, "web-count", 3);
    CHECK(pkitd.stop() == 0);
}
