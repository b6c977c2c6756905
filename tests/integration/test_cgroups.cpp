// cgroups for real (SPEC §15), each pkitd in a delegated cgroup of its own that the
// case makes under the tests' cgroup (harness_cgroup.hpp): a service's processes all in
// its cgroup, a setsid daemon stopped with its service, a group-mode run ended only
// once its cgroup is empty, a killed pkitd's leftovers killed by the next, and `auto`,
// `off` and `required` as SPEC §15 says. Needs root and a writable cgroup v2 hierarchy;
// skipped with the reason elsewhere.

#include <signal.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "tests/integration/harness.hpp"
#include "tests/integration/harness_cgroup.hpp"
#include "tests/integration/http_client.hpp"

using namespace pkit::itest;

namespace {

// A delegated cgroup for the case, or a skip with the reason.
#define NEED_CGROUP(name)                     \
    std::string why_##name;                   \
    auto name = TestCgroup::make(why_##name); \
    if (!name) {                              \
        PKIT_SKIP(why_##name);                \
    }

// A shell script line that starts a process in a session of its own, ignoring SIGTERM,
// that writes its pid to FILE once running.
std::string escaped_daemon(const TempDir& dir, const std::string& file) {
    return "setsid sh -c 'trap \"\" TERM; echo $$$$ > " + dir.file(file + ".tmp") + "; mv " +
           dir.file(file + ".tmp") + " " + dir.file(file) + "; exec sleep 1000' & ";
}

pid_t read_pid(const TempDir& dir, const std::string& file) {
    wait_file(dir.file(file));
    return static_cast<pid_t>(std::stol(read_file(dir.file(file))));
}

bool gone(pid_t pid) {
    return !pid_alive(pid) || is_zombie(pid);
}

// The value of the sample line starting with `series` ("name{labels}"), or -1.
double metric_value(const std::string& text, const std::string& series) {
    for (std::size_t at = 0; (at = text.find(series + " ", at)) != std::string::npos;
         at += series.size()) {
        if (at == 0 || text[at - 1] == '\n') {
            return std::stod(text.substr(at + series.size() + 1));
        }
    }
    return -1;
}

bool lists(const std::string& procs, pid_t pid) {
    return ("\n" + procs).find("\n" + std::to_string(pid) + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("in a delegated cgroup each service runs in its own, removed when pkitd exits") {
    NEED_CGROUP(cg);
    TempDir dir;
    dir.service("web", sh_command(escaped_daemon(dir, "escaped") + "exec sleep 1000"));
    Daemon pkitd(dir, {.cgroup = cg->path()});
    pkitd.wait_ready();
    Client client = pkitd.client();
    json daemon = daemon_status(client);
    CHECK(daemon["cgroups"]["enabled"] == true);
    CHECK(daemon["cgroups"]["path"] == cg->path());
    CHECK(daemon["cgroups"]["reason"].is_null());
    CHECK(daemon["cgroups"]["controllers"].is_array());

    json web = wait_running(client, "web");
    pid_t main_pid = web["pid"].get<pid_t>();
    pid_t escaped = read_pid(dir, "escaped");
    CHECK(lists(cg->read("_pkitd", "cgroup.procs"), pkitd.pid()));
    CHECK(lists(cg->read("web", "cgroup.procs"), main_pid));
    CHECK_MESSAGE(lists(cg->read("web", "cgroup.procs"), escaped), cg->read("web", "cgroup.procs"));

    CHECK(pkitd.stop() == 0);
    CHECK(gone(escaped));
    CHECK_FALSE(fs::exists(cg->path() + "/web"));
    CHECK_FALSE(fs::exists(cg->path() + "/_pkitd"));
}

TEST_CASE("with cgroups a setsid daemon is killed when its service stops") {
    NEED_CGROUP(cg);
    TempDir dir;
    dir.service("web", sh_command(escaped_daemon(dir, "escaped") + "exec sleep 1000") +
                           "[stop]\ntimeout = \"1s\"\n");
    Daemon pkitd(dir, {.cgroup = cg->path()});
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_running(client, "web");
    pid_t escaped = read_pid(dir, "escaped");

    CommandResult stopped = ctl(pkitd, {"stop", "web"});
    CHECK_MESSAGE(stopped.exit_code == 0, stopped.all());
    // The stop is answered once the run has ended: its cgroup empty.
    CHECK_MESSAGE(gone(escaped), describe(marker_processes(dir.str(), {pkitd.pid()})));
    CHECK_FALSE(cg->populated("web"));
    CHECK(status(client, "web")["state"] == "stopped");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("with cgroups a group-mode run ends once its cgroup is empty") {
    NEED_CGROUP(cg);
    TempDir dir;
    // The main process exits at once; a process that left its group gets the stop
    // signal, says so, and exits only once the case lets it.
    const std::string child = "setsid sh -c 'trap \"touch " + dir.file("got-term") +
                              "\" TERM; touch " + dir.file("child-up") + "; until [ -e " +
                              dir.file("release") + " ]; do sleep 0.05; done' & ";
    dir.service("job", sh_command(child + "until [ -e " + dir.file("child-up") +
                                  " ]; do sleep 0.05; done; exit 3") +
                           "[stop]\ntimeout = \"60s\"\n" + restart_table("never", "1s"));
    Daemon pkitd(dir, {.cgroup = cg->path()});
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_file(dir.file("got-term"));
    // Its main process is gone, yet the run goes on while its cgroup holds a process.
    json job = status(client, "job");
    CHECK(job["state"] == "running");
    CHECK(job["last_exit"].is_null());
    CHECK(cg->populated("job"));
    // That wait is not in an upgrade's state: an upgrade meanwhile is refused, saying why.
    CommandResult upgrade = ctl(pkitd, {"upgrade"}, 40s);
    CHECK(upgrade.exit_code == 1);
    CHECK_MESSAGE(upgrade.err.find("the run of job is ending") != std::string::npos, upgrade.all());
    CHECK(status(client, "job")["state"] == "running");

    touch(dir.file("release"));
    json ended = wait_status(client, "job", state_is("failed"), 10s, "the run ended");
    CHECK(last_exit(ended)["code"] == 3);
    CHECK_FALSE(cg->populated("job"));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("with cgroups what a SIGKILLed pkitd's services left is killed by the next") {
    NEED_CGROUP(cg);
    TempDir dir;
    dir.service("web", sh_command(escaped_daemon(dir, "escaped") + "exec sleep 1000"));
    pid_t escaped = 0;
    {
        Daemon first(dir, {.cgroup = cg->path()});
        first.wait_ready();
        Client client = first.client();
        wait_running(client, "web");
        escaped = read_pid(dir, "escaped");
        first.signal(SIGKILL);
        REQUIRE(first.wait_exit(10s) == 128 + SIGKILL);
        CHECK_FALSE(gone(escaped));  // outside the recorded group: only its cgroup knows it
        fs::remove(dir.file("escaped"));
        Daemon second(dir, {.cgroup = cg->path()});
        second.wait_ready();
        wait_for([&] { return gone(escaped); }, 5s, "the escaped process killed");
        CHECK_MESSAGE(
            second.log().find("killed what a previous pkitd left in the cgroups of web") !=
                std::string::npos,
            second.log());
        Client again = second.client();
        json web = wait_running(again, "web");
        CHECK(lists(cg->read("web", "cgroup.procs"), web["pid"].get<pid_t>()));
        CHECK(second.stop() == 0);
    }
}

TEST_CASE("auto leaves a cgroup that is not delegated alone; off uses none") {
    NEED_CGROUP(cg);
    TempDir dir;
    dir.service("web", runner_toml());
    bool automatic = false;
    SUBCASE("auto in a cgroup not delegated") {
        REQUIRE(::removexattr(cg->path().c_str(), "trusted.delegate") == 0);
        automatic = true;
    }
    SUBCASE("off in a delegated cgroup") {
        dir.daemon_config("cgroups = \"off\"\n");
    }
    Daemon pkitd(dir, {.cgroup = cg->path()});
    pkitd.wait_ready();
    if (automatic) {
        // pkitd's first line says so as information, not as a fault (the rule on a host).
        const std::string first = lines_of(pkitd.log()).at(0);
        CHECK_MESSAGE(first.starts_with("pkitd: cgroups: none of pkitd's own here, so services "
                                        "run in process groups (pause and [resources] need "
                                        "one; pkitd(8), CGROUPS): not PID 1 of its namespace"),
                      first);
    }
    Client client = pkitd.client();
    json daemon = daemon_status(client);
    CHECK(daemon["cgroups"]["enabled"] == false);
    CHECK(daemon["cgroups"]["path"].is_null());
    CHECK(daemon["cgroups"]["reason"].is_string());
    wait_running(client, "web");
    CHECK_FALSE(fs::exists(cg->path() + "/web"));
    CHECK_FALSE(fs::exists(cg->path() + "/_pkitd"));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("required uses a writable cgroup that is not delegated") {
    NEED_CGROUP(cg);
    REQUIRE(::removexattr(cg->path().c_str(), "trusted.delegate") == 0);
    TempDir dir;
    dir.daemon_config("cgroups = \"required\"\n");
    dir.service("web", runner_toml());
    Daemon pkitd(dir, {.cgroup = cg->path()});
    pkitd.wait_ready();
    Client client = pkitd.client();
    CHECK(daemon_status(client)["cgroups"]["enabled"] == true);
    json web = wait_running(client, "web");
    CHECK(lists(cg->read("web", "cgroup.procs"), web["pid"].get<pid_t>()));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("required: a [resources] key whose controller is missing is a configuration error") {
    NEED_CGROUP(cg);
    // A key whose controller this cgroup does not offer its children.
    const std::string offered = " " + read_file(cg->path() + "/cgroup.controllers") + " ";
    std::string key;
    std::string controller;
    for (auto [k, c] :
         {std::pair{"memory_max = \"64MiB\"", "memory"}, std::pair{"pids_max = 100", "pids"},
          std::pair{"io_weight = 50", "io"}, std::pair{"cpu_weight = 50", "cpu"}}) {
        if (offered.find(std::string(" ") + c + " ") == std::string::npos &&
            offered.find(std::string(" ") + c + "\n") == std::string::npos) {
            key = k;
            controller = c;
            break;
        }
    }
    if (key.empty()) {
        PKIT_SKIP("every controller is available in " + cg->path() + ": nothing to refuse");
    }
    const std::string name = key.substr(0, key.find(' '));
    const std::string error =
        "web.toml:5:1: error: resources." + name + ": cannot be applied: the " + controller +
        " controller is not available in " + cg->path() + " (cgroups = \"required\")";
    TempDir dir;
    dir.daemon_config("cgroups = \"required\"\n");
    SUBCASE("at start-up pkitd exits 2 and starts nothing") {
        dir.service("web", runner_toml() + "[resources]\n" + key + "\n");
        Daemon pkitd(dir, {.cgroup = cg->path()});
        auto status = pkitd.wait_exit(10s);
        REQUIRE(status);
        CHECK_MESSAGE(*status == 2, pkitd.log());
        CHECK_MESSAGE(pkitd.log().find(error) != std::string::npos, pkitd.log());
        CHECK_FALSE(fs::exists(cg->path() + "/web"));
    }
    SUBCASE("a reload that adds one is refused, and nothing changes") {
        dir.service("web", runner_toml());
        Daemon pkitd(dir, {.cgroup = cg->path()});
        pkitd.wait_ready();
        Client client = pkitd.client();
        const json pid = wait_running(client, "web")["pid"];
        dir.service("web", runner_toml() + "[resources]\n" + key + "\n");
        CommandResult reload = ctl(pkitd, {"reload"});
        CHECK(reload.exit_code != 0);
        CHECK_MESSAGE(reload.all().find(error) != std::string::npos, reload.all());
        json web = status(client, "web");
        CHECK(web["pid"] == pid);
        CHECK(web["resource_limits"].is_null());
        CHECK(pkitd.stop() == 0);
    }
}

TEST_CASE("required without a writable cgroup: pkitd exits 3 saying why") {
    NEED_CGROUP(cg);
    if (!have_program("unshare") || !have_program("mount")) {
        PKIT_SKIP("no util-linux unshare and mount");
    }
    TempDir dir;
    dir.daemon_config("cgroups = \"required\"\n");
    dir.service("web", runner_toml());
    // In a mount namespace of its own, the cgroup2 mount made read-only for pkitd alone.
    const std::string mount = cg->mount_point();
    Daemon pkitd(dir, {.wrapper = {"unshare", "--mount", "--propagation", "private", "sh", "-c",
                                   "mount -o remount,bind,ro " + mount + " && exec \"$0\" \"$@\""},
                       .cgroup = cg->path()});
    auto status = pkitd.wait_exit(10s);
    REQUIRE(status);
    CHECK_MESSAGE(*status == 3, pkitd.log());
    CHECK_MESSAGE(
        pkitd.log().find("cgroups = \"required\", but no cgroup can be used: its "
                         "cgroup " +
                         cg->path() + " is not writable: mounted read-only") != std::string::npos,
        pkitd.log());
}

TEST_CASE("with cgroups a run's resources count the processes that left its group") {
    NEED_CGROUP(cg);
    TempDir dir;
    // The escaped process burns CPU for a moment, then sleeps.
    const std::string burner =
        "setsid sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; "
        "touch " +
        dir.file("burnt") + "; exec sleep 1000' & ";
    dir.service("web", sh_command(burner + "exec sleep 1000"));
    const int port = with_http(dir);
    Daemon pkitd(dir, {.cgroup = cg->path()});
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_running(client, "web");
    wait_file(dir.file("burnt"));
    // The main process and the escaped one, though only the main one is in the group
    // (once the escaped one's `touch` has exited: polled, not read once).
    json used;
    wait_for(
        [&] {
            json reply =
                client.request({{"cmd", "status"}, {"services", {"web"}}, {"resources", true}});
            used = reply["result"]["services"][0]["resources"];
            return used.is_object() && used["processes"] == 2;
        },
        10s, "resources count 2 processes", [&] { return used.dump(); });
    CHECK_MESSAGE(used["rss_bytes"].get<double>() > 0, used.dump());
    // The escaped process's loop ran in the cgroup: its CPU time is the run's.
    CHECK_MESSAGE(used["cpu_seconds"].get<double>() > 0.0, used.dump());
    // /metrics reads them the same way (off the loop): the escaped process counts there too.
    HttpReply scrape = http_get(port, "/metrics");
    REQUIRE(scrape.status == 200);
    CHECK_MESSAGE(metric_value(scrape.body, "pkit_service_processes{service=\"web\"}") == 2,
                  scrape.body);
    CHECK(metric_value(scrape.body, "pkit_service_cpu_seconds_total{service=\"web\"}") > 0.0);
    CHECK(metric_value(scrape.body, "pkit_service_resident_memory_bytes{service=\"web\"}") > 0);
    CHECK(metric_value(scrape.body, "pkit_service_oom_kills_total{service=\"web\"}") == 0);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a [resources] limit whose controller is not available is reported in the log") {
    NEED_CGROUP(cg);
    TempDir dir;
    dir.service("web", runner_toml() + "[resources]\nmemory_max = \"64MiB\"\ncpu_weight = 50\n");
    dir.service("plain", runner_toml());
    std::string controllers;
    SUBCASE("with cgroups") {
        Daemon pkitd(dir, {.cgroup = cg->path()});
        pkitd.wait_ready();
        Client client = pkitd.client();
        wait_running(client, "web");
        json daemon = daemon_status(client);
        std::vector<std::string> enabled = daemon["cgroups"]["controllers"];
        for (const char* controller : {"memory", "cpu"}) {
            if (std::ranges::find(enabled, controller) != enabled.end()) {
                continue;  // a machine that has it: applied, not reported
            }
            std::string key = std::string(controller) == "memory" ? "memory_max" : "cpu_weight";
            std::string line =
                key + " (the " + controller + " controller is not available in " + cg->path() + ")";
            wait_for([&] { return pkitd.log().find(line) != std::string::npos; }, 5s,
                     "the log names " + key, [&] { return pkitd.log(); });
        }
        // Status says the same: each key applied, or not and why (SPEC §15).
        json limits = status(client, "web")["resource_limits"];
        REQUIRE_MESSAGE(limits.is_object(), limits.dump());
        std::vector<std::string> keys = limits["applied"];
        for (const json& entry : limits["not_applied"]) {
            keys.push_back(entry["key"]);
            const std::string controller = entry["key"] == "memory_max" ? "memory" : "cpu";
            CHECK(std::ranges::find(enabled, controller) == enabled.end());
            CHECK(entry["reason"] ==
                  "the " + controller + " controller is not available in " + cg->path());
        }
        std::ranges::sort(keys);
        CHECK(keys == std::vector<std::string>{"cpu_weight", "memory_max"});
        CHECK(status(client, "plain")["resource_limits"].is_null());
        CHECK(pkitd.stop() == 0);
    }
    SUBCASE("without cgroups") {
        dir.daemon_config("cgroups = \"off\"\n");
        Daemon pkitd(dir, {.cgroup = cg->path()});
        pkitd.wait_ready();
        Client client = pkitd.client();
        wait_running(client, "web");
        const std::string line =
            "web: [resources] not applied: cpu_weight (cgroups not used: cgroups = \"off\"); "
            "memory_max (cgroups not used: cgroups = \"off\")";
        wait_for([&] { return pkitd.log().find(line) != std::string::npos; }, 5s,
                 "the log names both limits", [&] { return pkitd.log(); });
        const std::string why = "cgroups not used: cgroups = \"off\"";
        CHECK(status(client, "web")["resource_limits"] ==
              json{{"applied", json::array()},
                   {"not_applied",
                    {{{"key", "cpu_weight"}, {"reason", why}},
                     {{"key", "memory_max"}, {"reason", why}}}}});
        CHECK(status(client, "plain")["resource_limits"].is_null());
        CHECK(pkitd.stop() == 0);
    }
}

TEST_CASE("--check warns at each [resources] key pkitd would not apply") {
    TempDir dir;
    dir.daemon_config("cgroups = \"off\"\n");
    dir.service("web", "command = [\"/bin/true\"]\n[resources]\nmemory_max = \"64MiB\"\n");
    CommandResult check = run_pkitd({"--check", "--config", dir.str()});
    CHECK_MESSAGE(check.exit_code == 0, check.all());
    CHECK_MESSAGE(
        check.err.find(dir.str() + "/services/web.toml:3:1: warning: resources.memory_max: not "
                                   "applied: cgroups not used: cgroups = \"off\"") !=
            std::string::npos,
        check.err);
}

TEST_CASE("with cgroups a service whose cgroup was killed at its stop starts again") {
    NEED_CGROUP(cg);
    TempDir dir;
    dir.service("web",
                sh_command("trap '' TERM; exec sleep 1000") + "[stop]\ntimeout = \"300ms\"\n");
    Daemon pkitd(dir, {.cgroup = cg->path()});
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_running(client, "web");
    CommandResult stopped = ctl(pkitd, {"stop", "web"});
    CHECK_MESSAGE(stopped.exit_code == 0, stopped.all());
    CHECK(last_exit(status(client, "web"))["signal"] == "SIGKILL");

    CommandResult started = ctl(pkitd, {"start", "web"});
    CHECK_MESSAGE(started.exit_code == 0, started.all());
    json web = wait_running(client, "web", 2);
    pid_t pid = web["pid"].get<pid_t>();
    // The second run really runs its program in the cgroup.
    wait_for(
        [&] {
            auto info = proc_info(pid);
            return info && info->cmdline == "sleep 1000";
        },
        5s, "run 2 execs sleep", [&] { return status(client, "web").dump(); });
    CHECK(lists(cg->read("web", "cgroup.procs"), pid));
    CHECK(status(client, "web")["run"] == 2);
    CHECK(pkitd.stop() == 0);
}
