// `pkitctl status` at scale (SPEC §17): globs and --state over the services pkitd
// has, a summary line under a long table on a terminal, and long names cut to the
// terminal's width there (in full with --json). The terminal is util-linux `script`'s.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// `pkitctl --socket SOCKET ARGS` on an 80-column pseudo-terminal; what it printed.
CommandResult status_on_terminal(const Daemon& pkitd, const std::string& args) {
    const std::string command = "stty cols 80 rows 50; env -u NO_COLOR TERM=dumb '" +
                                std::string(PKITCTL_BIN) + "' --socket '" + pkitd.socket() + "' " +
                                args;
    return run_command({"/usr/bin/env", "script", "-qfec", command, "/dev/null"}, 20s);
}

}  // namespace

TEST_CASE("ctl status at scale: globs, --state, the summary line and names cut to the width") {
    if (!have_program("script")) {
        PKIT_SKIP("util-linux script is missing: no pseudo-terminal");
    }
    TempDir dir;
    const std::string long_name(64, 'x');
    for (int i = 0; i < 10; ++i) {
        dir.service("svc-0" + std::to_string(i), sh_command("exec sleep 1000"));
    }
    dir.service(long_name, sh_command("exec sleep 1000"));
    dir.service("broken", sh_command("exit 2") + restart_table("on_crash", "10ms", 1.0, 0));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "broken", state_is("failed"), 10s, "broken fails");
    wait_status(client, long_name, state_is("running"), 10s, "the long one runs");
    wait_status(client, "svc-09", state_is("running"), 10s, "svc-09 runs");

    auto glob = run_ctl({"--socket", pkitd.socket(), "status", "svc-0[5-7]"});
    INFO(glob.all());
    CHECK(glob.exit_code == 0);
    CHECK(glob.out.find("svc-05") != std::string::npos);
    CHECK(glob.out.find("svc-07") != std::string::npos);
    CHECK(glob.out.find("svc-04") == std::string::npos);
    CHECK(glob.out.find("svc-08") == std::string::npos);
    // Not running among the named: exit 3, as for plain names.
    CHECK(run_ctl({"--socket", pkitd.socket(), "status", "b*"}).exit_code == 3);
    auto none = run_ctl({"--socket", pkitd.socket(), "status", "db-*"});
    CHECK(none.exit_code == 1);
    CHECK(none.err == "pkitctl: unknown_service: no service matches \"db-*\"\n");

    auto failed = run_ctl({"--socket", pkitd.socket(), "--json", "status", "--state", "failed"});
    REQUIRE(failed.exit_code == 0);
    json rows = json::parse(failed.out)["services"];
    REQUIRE(rows.size() == 1);
    CHECK(rows[0]["name"] == "broken");
    auto several = run_ctl(
        {"--socket", pkitd.socket(), "status", "--state", "failed,running", "--state", "backoff"});
    CHECK(several.exit_code == 0);
    CHECK(std::count(several.out.begin(), several.out.end(), '\n') == 13);  // titles + 12

    // On a terminal: the summary line under more than 10 rows, names cut to 80 columns.
    auto table = status_on_terminal(pkitd, "status");
    INFO(table.out);
    CHECK(table.exit_code == 0);
    CHECK(table.out.find("12 services: 11 running, 1 failed") != std::string::npos);
    CHECK(widest_line(table.out) <= 80);
    CHECK(table.out.find("\u2026") != std::string::npos);
    CHECK(table.out.find(long_name) == std::string::npos);
    // Through a pipe nothing is cut and no summary is added; --json has the full name.
    auto piped = run_ctl({"--socket", pkitd.socket(), "status"});
    CHECK(piped.out.find(long_name) != std::string::npos);
    CHECK(piped.out.find("12 services") == std::string::npos);
    auto full = run_ctl({"--socket", pkitd.socket(), "--json", "status", "x*"});
    CHECK(json::parse(full.out)["services"][0]["name"] == long_name);
    // Ten rows or fewer: no summary.
    auto short_table = status_on_terminal(pkitd, "status 'svc-*'");
    CHECK(short_table.out.find("services:") == std::string::npos);
    CHECK(pkitd.stop() == 0);
}
