// [health] memory_max for real (SPEC §20): a run that allocates past a small limit is
// measured every memory_interval, stopped at the second measurement over it with
// killed_by "memory", counted as a crash and restarted; `memory = true` in give_up_when
// ends supervision there. Without cgroups (the RSS of the run's process group) and,
// where the machine offers a delegated cgroup, with one (its memory.current, or the RSS
// of its processes when the memory controller is not there).

#include <signal.h>

#include <sstream>

#include "tests/integration/harness.hpp"
#include "tests/integration/harness_cgroup.hpp"
#include "tests/integration/http_client.hpp"

using namespace pkit::itest;

namespace {

// 64 MiB written (so resident), then a long sleep: past a 32 MiB memory_max at once.
std::string hog_toml(const std::string& more = "") {
    return "command = [\"/usr/bin/perl\", \"-e\", " +
           toml_str("$x = 'x' x (64 << 20); $| = 1; print \"allocated\\n\"; sleep 1000") +
           "]\n[health]\nmemory_max = \"32MiB\"\nmemory_interval = \"1s\"\n" + more;
}

// The same limit over a run that stays far under it.
const std::string k_small_toml =
    "command = [\"/bin/sleep\", \"1000\"]\n"
    "[health]\nmemory_max = \"32MiB\"\nmemory_interval = \"1s\"\n";

double memory_metric(const std::string& text, const std::string& series) {
    for (std::size_t at = 0; (at = text.find(series + " ", at)) != std::string::npos;
         at += series.size()) {
        if (at == 0 || text[at - 1] == '\n') {
            return std::stod(text.substr(at + series.size() + 1));
        }
    }
    return -1;
}

int count_lines_with(const std::string& text, const std::string& words) {
    std::istringstream in(text);
    int count = 0;
    for (std::string line; std::getline(in, line);) {
        count += line.find(words) != std::string::npos ? 1 : 0;
    }
    return count;
}

std::function<bool(const json&)> memory_killed_and_restarted() {
    return [](const json& s) {
        return s["run"].get<int>() >= 2 && s["last_exit"].is_object() &&
               s["last_exit"]["killed_by"] == "memory";
    };
}

// The run over memory_max stopped, restarted; the one under it left alone.
void check_memory_kill(const TempDir& dir, DaemonOptions options, const std::string& measured) {
    const int port = with_http(dir, options.cgroup.empty() ? "cgroups = \"off\"\n" : "");
    dir.service("hog", hog_toml() + restart_table("always", "100ms", 1.0));
    dir.service("small", k_small_toml);
    Daemon pkitd(dir, std::move(options));
    pkitd.wait_ready();
    Client client = pkitd.client();
    EventStream events(pkitd.socket());
    json s = wait_status(client, "hog", memory_killed_and_restarted(), 20s,
                         "hog stopped over memory_max and restarted");
    CHECK(s["last_exit"]["signal"] == "SIGTERM");
    CHECK(s["stopped"].is_null());
    CHECK(s["restarts"].get<int>() >= 1);
    // The liveness_kill event says why; the exited event says who ended the run.
    json kill = events.until([](const json& e) { return is_event(e, "liveness_kill", "hog"); }, 20s,
                             "hog's liveness_kill event");
    CHECK_MESSAGE(
        kill["reason"].get<std::string>().starts_with("over memory_max 32MiB (" + measured + " "),
        kill.dump());
    json exited = events.until(
        [](const json& e) { return is_event(e, "exited", "hog") && e["killed_by"] == "memory"; },
        20s, "hog's exited event with killed_by memory");
    CHECK(exited["signal"] == "SIGTERM");
    CHECK_MESSAGE(
        count_lines_with(pkitd.log(), "hog: over memory_max 32MiB (" + measured + " ") >= 1,
        pkitd.log());
    CHECK(count_lines_with(pkitd.log(), "MiB): stopping (run 1)") == 1);
    CHECK(count_lines_with(pkitd.log(), "hog: ended by SIGTERM (over memory_max) (run 1, ") == 1);
    // Counted as a crash and as a memory kill.
    HttpReply scrape = http_get(port, "/metrics");
    REQUIRE(scrape.status == 200);
    CHECK(memory_metric(scrape.body, "pkit_service_memory_kills_total{service=\"hog\"}") >= 1);
    CHECK(memory_metric(scrape.body, "pkit_service_crashes_total{service=\"hog\"}") >= 1);
    CHECK(memory_metric(scrape.body, "pkit_service_memory_kills_total{service=\"small\"}") == 0);
    // Under the limit nothing happens, however many measurements went by.
    json small = status(client, "small");
    CHECK(small["run"] == 1);
    CHECK(small["state"] == "running");
    CHECK(small["last_exit"].is_null());
    CHECK(pkitd.stop() == 0);
}

}  // namespace

TEST_CASE("memory_max without cgroups: a run over it is stopped as memory, a crash, restarted") {
    TempDir dir;
    check_memory_kill(dir, {}, "RSS");
}

TEST_CASE("memory_max with a cgroup: the same, measured from the run's cgroup") {
    std::string why;
    auto cg = TestCgroup::make(why);
    REQUIRE_MESSAGE(cg != nullptr, "a delegated cgroup for the test: " << why);
    TempDir dir;
    // memory.current where the memory controller is enabled for the services' cgroups,
    // else the RSS of the processes the cgroup lists.
    const bool memory_controller =
        read_file(cg->path() + "/cgroup.controllers").find("memory") != std::string::npos;
    check_memory_kill(dir, {.cgroup = cg->path()}, memory_controller ? "memory.current" : "RSS");
}

TEST_CASE("memory_max with give_up_when memory = true: supervision ends at the first stop") {
    TempDir dir;
    dir.daemon_config("cgroups = \"off\"\n");
    dir.service(
        "hog", hog_toml("[give_up_when]\nmemory = true\n") + restart_table("always", "100ms", 1.0));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json s = wait_status(client, "hog", state_is("failed"), 20s, "hog gives up");
    CHECK(s["stopped"] == "gave_up");
    CHECK(s["run"] == 1);
    CHECK(last_exit(s)["killed_by"] == "memory");
    CHECK_MESSAGE(
        pkitd.log().find("a memory_max stop matched give_up_when.memory") != std::string::npos,
        pkitd.log());
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("memory_max without cgroups counts a descendant that left the process group") {
    TempDir dir;
    dir.daemon_config("cgroups = \"off\"\n");
    const std::string pid_file = dir.file("escaped.pid");
    // The main process (sh, then sleep) uses little; the child it started in a session
    // of its own (setsid: out of the run's process group) holds 64 MiB.
    const std::string escaped =
        "setsid /usr/bin/perl -e " +
        std::string("'open(F, \">" + pid_file + ".tmp\"); print F $$$$; close F; rename(\"" +
                    pid_file + ".tmp\", \"" + pid_file +
                    "\"); $x = \"x\" x (64 << 20); sleep 1000' & ");
    dir.service("hog", sh_command(escaped + "exec sleep 1000") +
                           "[health]\nmemory_max = \"32MiB\"\nmemory_interval = \"1s\"\n"
                           "[give_up_when]\nmemory = true\n" +
                           restart_table("always", "100ms", 1.0));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_file(pid_file);
    const pid_t apart = static_cast<pid_t>(std::stol(read_file(pid_file)));
    CHECK(getpgid(apart) == apart);  // a group of its own
    json s = wait_status(client, "hog", state_is("failed"), 20s,
                         "hog stopped over memory_max for its descendant");
    ::kill(apart, SIGKILL);  // without a cgroup the stop does not reach it
    CHECK(last_exit(s)["killed_by"] == "memory");
    CHECK(s["stopped"] == "gave_up");
    CHECK_MESSAGE(pkitd.log().find("hog: over memory_max 32MiB (RSS ") != std::string::npos,
                  pkitd.log());
    CHECK(pkitd.stop() == 0);
}
