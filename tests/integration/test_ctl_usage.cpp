// pkitctl's usage (SPEC §21): a value an option does not know is a usage error naming
// the valid ones, a missing NAME says of which command, every command over services
// takes globs as status does, an unknown signal gets the nearest name, and a socket
// that cannot be reached says which one was tried and how to name another.

#include <sys/stat.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

TEST_CASE("ctl usage: a value an option does not know exits 2 and lists the valid ones") {
    TempDir dir;
    dir.service("web", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    auto sideways = ctl(pkitd, {"status", "--state", "sideways"});
    CHECK(sideways.exit_code == 2);
    CHECK(sideways.out.empty());
    CHECK_MESSAGE(sideways.err ==
                      "pkitctl: --state: unknown state \"sideways\" (states: waiting, starting, "
                      "running, stopping, backoff, storm_pause, stopped, done, failed, "
                      "scheduled, paused)\n",
                  sideways.err);
    auto typo = ctl(pkitd, {"--json", "status", "--state", "running,runing"});
    CHECK(typo.exit_code == 2);
    CHECK_MESSAGE(typo.err.starts_with("pkitctl: --state: unknown state \"runing\"; did you "
                                       "mean \"running\"? (states: waiting,"),
                  typo.err);
    // Every other option with a fixed set of values says the set.
    const std::vector<std::pair<std::vector<std::string>, std::string>> others{
        {{"wait", "--for", "redy", "web"}, "ready"},
        {{"logs", "--stream", "stdin", "web"}, "stderr"},
        {{"events", "--type", "exit"}, "restarts_exhausted"},
        {{"--color", "sometimes", "status"}, "never"},
    };
    for (const auto& [args, valid] : others) {
        auto r = ctl(pkitd, args);
        CHECK_MESSAGE(r.exit_code == 2, args[1], ": ", r.all());
        CHECK_MESSAGE(r.err.find(valid) != std::string::npos, args[1], ": ", r.err);
    }
    // A running state still selects.
    auto running = ctl(pkitd, {"status", "--state", "running"});
    CHECK_MESSAGE(running.exit_code == 0, running.all());
    CHECK(running.out.find("web") != std::string::npos);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ctl usage: a command without its NAME says which command and how to call it") {
    for (const std::string command : {"logs", "explain", "show"}) {
        auto r = run_ctl({"--socket", "/nonexistent/pkitd.sock", command});
        CHECK_MESSAGE(r.exit_code == 2, command, ": ", r.all());
        const std::vector<std::string> lines = lines_of(r.err);
        REQUIRE_MESSAGE(lines.size() >= 2, r.err);
        CHECK_MESSAGE(lines[0].starts_with("pkitctl " + command + ": "), r.err);
        CHECK_MESSAGE(lines[0].ends_with(" is required"), r.err);
        CHECK_MESSAGE(lines[1].starts_with("Usage: pkitctl " + command + " [OPTIONS] "), r.err);
    }
    for (const std::vector<std::string>& args :
         std::vector<std::vector<std::string>>{{"signal"}, {"signal", "web"}}) {
        std::vector<std::string> all{"--socket", "/nonexistent/pkitd.sock"};
        all.insert(all.end(), args.begin(), args.end());
        auto r = run_ctl(all);
        CHECK(r.exit_code == 2);
        CHECK(r.err ==
              "pkitctl: signal: name the services, then the signal: pkitctl signal "
              "[--group] NAME... SIGNAL\n");
    }
}

TEST_CASE("ctl usage: every command over services takes globs, and an empty glob is an error") {
    TempDir dir;
    const std::string hups = dir.file("hups");
    for (const std::string name : {"worker-1", "worker-2", "web"}) {
        dir.service(name,
                    sh_command("trap 'echo " + name + " >> " + hups + "' HUP; echo up " + name +
                               "; while true; do sleep 0.05; "
                               "done"));
    }
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    for (const std::string name : {"worker-1", "worker-2", "web"}) {
        wait_status(client, name, state_is("running"), 10s, "running");
    }
    // signal: both workers, not web.
    auto signalled = ctl(pkitd, {"signal", "worker-*", "HUP"});
    CHECK_MESSAGE(signalled.exit_code == 0, signalled.all());
    wait_for([&] { return lines_of(read_file(hups)).size() == 2; }, 10s, "two HUPs",
             [&] { return read_file(hups); });
    CHECK(read_file(hups).find("web") == std::string::npos);
    // wait: both workers, by glob.
    auto waited = ctl(pkitd, {"wait", "--within", "5s", "worker-?"});
    CHECK_MESSAGE(waited.exit_code == 0, waited.all());
    CHECK(waited.out.find("worker-1") != std::string::npos);
    CHECK(waited.out.find("worker-2") != std::string::npos);
    CHECK(waited.out.find("web") == std::string::npos);
    // logs: both, interleaved with their names.
    auto logs = ctl(pkitd, {"logs", "worker-*"});
    CHECK_MESSAGE(logs.exit_code == 0, logs.all());
    CHECK(logs.out.find("worker-1 | up worker-1") != std::string::npos);
    CHECK(logs.out.find("worker-2 | up worker-2") != std::string::npos);
    // stop and start: the workers only.
    auto stopped = ctl(pkitd, {"stop", "worker-*"});
    CHECK_MESSAGE(stopped.exit_code == 0, stopped.all());
    CHECK(status(client, "worker-1")["state"] == "stopped");
    CHECK(status(client, "worker-2")["state"] == "stopped");
    CHECK(status(client, "web")["state"] == "running");
    auto started = ctl(pkitd, {"start", "worker-[12]"});
    CHECK_MESSAGE(started.exit_code == 0, started.all());
    wait_status(client, "worker-2", state_is("running"), 10s, "started again");
    // A glob no service matches is an error like an unknown name, for every command.
    for (const std::vector<std::string>& args :
         std::vector<std::vector<std::string>>{{"start", "db-*"},
                                               {"stop", "db-*"},
                                               {"restart", "db-*"},
                                               {"signal", "db-*", "HUP"},
                                               {"wait", "db-*"},
                                               {"logs", "db-*"},
                                               {"pause", "db-*"},
                                               {"resume", "db-*"}}) {
        auto r = ctl(pkitd, args);
        CHECK_MESSAGE(r.exit_code == 1, args[0], ": ", r.all());
        CHECK_MESSAGE(r.err == "pkitctl: unknown_service: no service matches \"db-*\"\n", args[0],
                      ": ", r.err);
    }
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ctl usage: events --service takes globs and refuses a name pkitd does not have") {
    TempDir dir;
    dir.service("web", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    auto typo = ctl(pkitd, {"events", "--service", "wbe"});
    CHECK(typo.exit_code == 1);
    CHECK(typo.err == "pkitctl: unknown_service: unknown service \"wbe\"; did you mean \"web\"?\n");
    auto none = ctl(pkitd, {"--json", "events", "--service", "db-*"});
    CHECK(none.exit_code == 1);
    CHECK(none.err == "pkitctl: unknown_service: no service matches \"db-*\"\n");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ctl usage: an unknown signal gets the nearest name") {
    auto r = run_ctl({"--socket", "/nonexistent/pkitd.sock", "signal", "web", "KILLL"});
    CHECK(r.exit_code == 2);
    CHECK(r.err ==
          "pkitctl: signal: unknown signal \"KILLL\"; did you mean \"KILL\"? (a name such as "
          "TERM, SIGHUP or RTMIN+3, or a number from 1 to 64)\n");
    auto lower = run_ctl({"--socket", "/nonexistent/pkitd.sock", "signal", "web", "hup"});
    CHECK(lower.exit_code == 2);
    CHECK(lower.err.find("; signal names are upper case: \"HUP\"") != std::string::npos);
}

TEST_CASE("ctl usage: a socket that cannot be reached says which was tried and how to name one") {
    TempDir dir;
    const std::string hint =
        "; name the socket with --socket PATH or PKIT_SOCKET=PATH (a pkitd not run as root "
        "listens on $XDG_RUNTIME_DIR/pkit/pkitd.sock)\n";
    const std::string missing = dir.file("nobody-home.sock");
    auto absent = run_ctl({"--socket", missing, "status"});
    CHECK(absent.exit_code == 4);
    CHECK(absent.err == "pkitctl: cannot connect to " + missing +
                            " (--socket): no such file (is pkitd running?)" + hint);
    auto from_env = run_ctl({"status"}, 20s, {"PKIT_SOCKET=" + missing});
    CHECK(from_env.exit_code == 4);
    CHECK(from_env.err == "pkitctl: cannot connect to " + missing +
                              " ($PKIT_SOCKET): no such file (is pkitd running?)" + hint);
    // A directory, or a plain file, is not "Connection refused".
    auto directory = run_ctl({"--socket", dir.str(), "status"});
    CHECK(directory.exit_code == 4);
    CHECK(directory.err == "pkitctl: cannot connect to " + dir.str() + " (--socket): " + dir.str() +
                               " is a directory, not a socket" + hint);
    const std::string plain = dir.file("plain");
    write_file(plain, "x");
    auto file = run_ctl({"--socket", plain, "status"});
    CHECK(file.exit_code == 4);
    CHECK(file.err == "pkitctl: cannot connect to " + plain + " (--socket): " + plain +
                          " is a regular file, not a socket" + hint);
}
