// The trial of an upgrade in place (SPEC §16, issue 44): before its exec pkitd runs the
// new binary on the very state it would hand over (`--upgrade-check --state FD`), and a
// binary that cannot resume it fails the upgrade with nothing changed. And what a client
// of `pkitctl upgrade` sees: its --timeout, a new pkitd that started every service
// afresh, a crash loop relaunching meanwhile.

#include <signal.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

CommandResult upgrade_trying(const Daemon& pkitd, std::vector<std::string> more = {},
                             std::chrono::milliseconds timeout = 60s) {
    std::vector<std::string> args{"upgrade"};
    args.insert(args.end(), more.begin(), more.end());
    return ctl(pkitd, args, timeout);
}

// A wrapper that is the real pkitd, but runs `on_state` instead when its arguments hold
// one of `flags` (" --state ", " --resume ").
std::string resume_wrapper(const TempDir& dir, const std::string& name, const std::string& flags,
                           const std::string& on_state) {
    return dir.script(name, "case \" $* \" in\n  " + flags + ")\n    " + on_state +
                                "\n    ;;\nesac\nexec " + std::string(PKITD_BIN) + " \"$@\"\n");
}

}  // namespace

TEST_CASE("an upgrade to a binary that cannot resume this state changes nothing") {
    TempDir dir;
    dir.service("web", runner_toml());
    dir.service("job", "type = \"oneshot\"\n" + sh_command("echo did it"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    const json web = wait_running(client, "web")["pid"];
    wait_status(client, "job", state_is("done"), 10s, "the job is done");
    const json pid = client.command("ping")["result"]["pid"];
    // Each is the real pkitd until it is handed the state.
    const std::string both = "*\" --state \"*|*\" --resume \"*";
    const std::vector<std::pair<std::string, std::string>> cases{
        {resume_wrapper(dir, "exits", both, "echo 'cannot read that' >&2; exit 1"),
         "cannot resume this pkitd's state: its trial exited 1: cannot read that"},
        {resume_wrapper(dir, "crashes", both, "kill -SEGV $$"),
         "cannot resume this pkitd's state: its trial was killed by SIGSEGV"},
        {resume_wrapper(dir, "hangs", both, "exec sleep 1000"),
         "cannot resume this pkitd's state: its trial did not finish within 10 s"},
        // A pkitd that claims the format but meets, in the trial, a state of the next.
        {resume_wrapper(dir, "next-format", "*\" --state \"*",
                        "sed 's/\"version\":3,/\"version\":4,/' <&3 >" + dir.file("next-state") +
                            "\n    exec " + std::string(PKITD_BIN) + " --upgrade-check --state 5 " +
                            "--config " + dir.str() + " 5<" + dir.file("next-state")),
         "pkitd: cannot resume this state: state version 4, this pkitd reads 1 to 3"},
    };
    for (const auto& [binary, why] : cases) {
        CAPTURE(binary);
        CommandResult refused = upgrade_trying(pkitd, {"--binary", binary});
        CHECK(refused.exit_code == 1);
        CHECK_MESSAGE(refused.err.find("upgrade_failed") != std::string::npos, refused.all());
        CHECK_MESSAGE(refused.err.find(why) != std::string::npos, refused.all());
        Client after = pkitd.client();
        CHECK(after.command("ping")["result"]["pid"] == pid);
        CHECK(status(after, "web")["pid"] == web);
        CHECK(status(after, "web")["run"] == 1);
    }
    CHECK(pkitd.log().find("upgraded from") == std::string::npos);
    // And the real one goes through, trial and all.
    CommandResult done = upgrade_trying(pkitd);
    CHECK_MESSAGE(done.exit_code == 0, done.all() << pkitd.log());
    CHECK(pkitd.log().find("tries the state") != std::string::npos);
    CHECK(status(client, "web")["pid"] == web);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("pkitd --upgrade-check --state refuses a state of the next format or cut short") {
    TempDir dir;
    dir.service("web", runner_toml());
    const std::vector<std::pair<std::string, std::string>> cases{
        {"{\"format\":\"pkit-state\",\"version\":4}", "state version 4, this pkitd reads 1 to 3"},
        {"{\"format\":\"pkit-state\",\"version\":3,\"core\":{\"serv", "the state is not JSON"},
    };
    for (const auto& [text, why] : cases) {
        write_file(dir.file("state"), text);
        CommandResult tried =
            run_command({"/bin/sh", "-c",
                         "exec " + std::string(PKITD_BIN) + " --upgrade-check --state 3 --config " +
                             dir.str() + " 3<" + dir.file("state")});
        CHECK(tried.exit_code == 1);
        CHECK_MESSAGE(
            tried.err.find("pkitd: cannot resume this state: " + why) != std::string::npos,
            tried.all());
    }
    CommandResult alone = run_pkitd({"--state", "3"});
    CHECK(alone.exit_code == 2);
    CHECK_MESSAGE(alone.err.find("--upgrade-check") != std::string::npos, alone.all());
}

TEST_CASE("pkitctl upgrade waits no longer than --timeout for the new pkitd") {
    TempDir dir;
    dir.service("web", runner_toml());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    const json web = wait_running(client, "web")["pid"];
    // The new pkitd serves 6 s after the exec.
    const std::string slow = resume_wrapper(dir, "slow", "*\" --resume \"*",
                                            "sleep 6; exec " + std::string(PKITD_BIN) + " \"$@\"");
    const auto begin = Clock::now();
    CommandResult late = upgrade_trying(pkitd, {"--binary", slow, "--timeout", "2s"}, 30s);
    const auto took = Clock::now() - begin;
    CHECK(late.exit_code == 4);
    CHECK_MESSAGE(late.err.find("within 2s") != std::string::npos, late.all());
    CHECK_MESSAGE(took < 5s, std::chrono::duration<double>(took).count() << " s");
    // The new pkitd serves in the end, with every service.
    wait_for(
        [&] {
            auto c = Client::try_connect(pkitd.socket());
            return c && c->command("ping", 15s)["ok"] == true;
        },
        20s, "the new pkitd answers");
    Client after = pkitd.client();
    CHECK(status(after, "web")["pid"] == web);
    CHECK(pkitd.log().find("upgraded from") != std::string::npos);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a new pkitd that cannot resume the state says so to pkitctl upgrade") {
    TempDir dir;
    dir.service("a", sh_command("exec sleep 1001") + "[stop]\ntimeout = \"2s\"\n");
    dir.service("b", sh_command("exec sleep 1002") + "[stop]\ntimeout = \"2s\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    const json a = wait_running(client, "a")["pid"];
    wait_running(client, "b");
    // The trial passes; then, before the resume, b's file goes: the state names a
    // service the configuration no longer has.
    const std::string moving = resume_wrapper(
        dir, "moving", "*\" --resume \"*",
        "rm " + dir.file("services/b.toml") + "; exec " + std::string(PKITD_BIN) + " \"$@\"");
    CommandResult done = upgrade_trying(pkitd, {"--binary", moving});
    CHECK(done.exit_code == 1);
    CHECK_MESSAGE(done.err.find("could not resume the state") != std::string::npos, done.all());
    CHECK_MESSAGE(done.err.find("started 1 service afresh") != std::string::npos, done.all());
    CHECK(done.out.find("upgraded pkitd") == std::string::npos);
    CHECK(pkitd.log().find("cannot resume from the state") != std::string::npos);
    Client after = pkitd.client();
    json restarted = wait_running(after, "a");
    CHECK(restarted["pid"] != a);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("an upgrade is not refused while crash loops relaunch their services") {
    TempDir dir;
    for (const char* name : {"c1", "c2", "c3", "c4", "c5"}) {
        dir.service(name, sh_command("sleep 0.02; exit 1") + restart_table("always", "20ms", 1.0));
    }
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "c5", run_at_least(3), 10s, "c5 loops");
    for (int i = 0; i < 10; ++i) {
        CommandResult done = upgrade_trying(pkitd);
        CHECK_MESSAGE(done.exit_code == 0, done.all());
    }
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("an upgrade to a pkitd that reads no format newer than 2 hands no client over") {
    TempDir dir;
    dir.service("web", runner_toml());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    const json web = wait_running(client, "web")["pid"];
    // An older pkitd, as its check describes it: no trial, state format 2.
    const std::string older =
        dir.script("older",
                   "case \" $* \" in\n  *\" --upgrade-check \"*)\n    echo 'pkitd 0.1.9'\n"
                   "    echo 'state-format 1 2'\n    exit 0\n    ;;\nesac\nexec " +
                       std::string(PKITD_BIN) + " \"$@\"\n");
    Client idle = pkitd.client();
    REQUIRE(idle.command("ping")["ok"] == true);
    // The answer comes before the exec; pkitctl then waits for a pkitd 0.1.9, which this
    // one (the real binary behind the wrapper) never says it is.
    CommandResult done = upgrade_trying(pkitd, {"--binary", older, "--timeout", "3s"}, 30s);
    CHECK(done.exit_code == 4);
    CHECK_MESSAGE(done.err.find("did not come back as version 0.1.9") != std::string::npos,
                  done.all());
    CHECK(pkitd.log().find("(format 2) handed over") != std::string::npos);
    CHECK(pkitd.log().find("tries the state") == std::string::npos);
    // The idle connection ended at the exec, as it did with such a pkitd.
    CHECK_FALSE(idle.read_line(Clock::now() + 10s).has_value());
    CHECK(idle.eof());
    Client after = pkitd.client();
    CHECK(status(after, "web")["pid"] == web);
    CHECK(pkitd.log().find("upgraded from") != std::string::npos);
    CHECK(pkitd.stop() == 0);
}
