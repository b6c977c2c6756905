// Restart policies (SPEC §2 [restart], §3 the gates): what each policy does after a
// clean run and after a crash, observed through the socket's `status`.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// A one-service tree: `script` under /bin/sh, then `restart` settings.
void one_service(const TempDir& dir, const std::string& script, const std::string& restart) {
    dir.service("svc", sh_command(script) + restart);
}

}  // namespace

TEST_CASE("on_crash ends supervision after a clean run: done, policy_satisfied, one run") {
    TempDir dir;
    one_service(dir, "exit 0", restart_table("on_crash", "50ms"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();

    json s = wait_status(client, "svc", state_is("done"), 5s, "supervision ends");
    CHECK(s["stopped"] == "policy_satisfied");
    CHECK(s["run"] == 1);
    CHECK(s["restarts"] == 0);
    CHECK(s["pid"].is_null());
    CHECK(last_exit(s)["code"] == 0);
    CHECK(last_exit(s)["signal"].is_null());
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("on_crash restarts a crashing service until max_restarts: exactly 3 runs for 2") {
    TempDir dir;
    one_service(dir, "exit 1", restart_table("on_crash", "50ms", 1.0, 2));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();

    json s = wait_status(client, "svc", state_is("failed"), 5s, "restarts are exhausted");
    CHECK(s["stopped"] == "restarts_exhausted");
    CHECK(s["run"] == 3);
    CHECK(s["restarts"] == 2);
    CHECK(last_exit(s)["code"] == 1);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("always restarts a service after clean runs and after crashes") {
    TempDir dir;
    SUBCASE("clean runs are restarted and never end supervision") {
        one_service(dir, "exit 0", restart_table("always", "50ms", 1.0));
        Daemon pkitd(dir);
        pkitd.wait_ready();
        Client client = pkitd.client();
        json s = wait_status(client, "svc", run_at_least(4), 5s, "a fourth run");
        CHECK(s["state"] != "done");
        CHECK(s["stopped"].is_null());
        CHECK(last_exit(s)["code"] == 0);
        CHECK(pkitd.stop() == 0);
    }
    SUBCASE("crashes are restarted, counted in restarts, up to max_restarts") {
        one_service(dir, "exit 1", restart_table("always", "50ms", 1.0, 2));
        Daemon pkitd(dir);
        pkitd.wait_ready();
        Client client = pkitd.client();
        json s = wait_status(client, "svc", state_is("failed"), 5s, "restarts exhausted");
        CHECK(s["stopped"] == "restarts_exhausted");
        CHECK(s["run"] == 3);
        CHECK(s["restarts"] == 2);
        CHECK(pkitd.stop() == 0);
    }
}

TEST_CASE("never ends supervision after the first run, clean or crashed") {
    TempDir dir;
    SUBCASE("a clean run ends done") {
        one_service(dir, "exit 0", restart_table("never", "50ms"));
        Daemon pkitd(dir);
        pkitd.wait_ready();
        Client client = pkitd.client();
        json s = wait_status(client, "svc", state_is("done"), 5s, "supervision ends");
        CHECK(s["stopped"] == "policy_satisfied");
        CHECK(s["run"] == 1);
        CHECK(s["restarts"] == 0);
        CHECK(pkitd.stop() == 0);
    }
    SUBCASE("a crash ends failed, still policy_satisfied") {
        one_service(dir, "exit 7", restart_table("never", "50ms"));
        Daemon pkitd(dir);
        pkitd.wait_ready();
        Client client = pkitd.client();
        json s = wait_status(client, "svc", state_is("failed"), 5s, "supervision ends");
        CHECK(s["stopped"] == "policy_satisfied");
        CHECK(s["run"] == 1);
        CHECK(s["restarts"] == 0);
        CHECK(last_exit(s)["code"] == 7);
        CHECK(pkitd.stop() == 0);
    }
    SUBCASE("death by a signal is a crash") {
        one_service(dir, "kill -KILL $$$$", restart_table("never", "50ms"));
        Daemon pkitd(dir);
        pkitd.wait_ready();
        Client client = pkitd.client();
        json s = wait_status(client, "svc", state_is("failed"), 5s, "supervision ends");
        CHECK(last_exit(s)["code"].is_null());
        CHECK(last_exit(s)["signal"] == "SIGKILL");
        CHECK(pkitd.stop() == 0);
    }
}

TEST_CASE("success_codes: exit 3 is clean with success_codes = [0, 3], a crash without") {
    TempDir dir;
    SUBCASE("listed: on_crash ends done after one run") {
        dir.service("svc", sh_command("exit 3") + "success_codes = [0, 3]\n" +
                               restart_table("on_crash", "50ms"));
        Daemon pkitd(dir);
        pkitd.wait_ready();
        Client client = pkitd.client();
        json s = wait_status(client, "svc", state_is("done"), 5s, "supervision ends");
        CHECK(s["stopped"] == "policy_satisfied");
        CHECK(s["run"] == 1);
        CHECK(last_exit(s)["code"] == 3);
        CHECK(pkitd.stop() == 0);
    }
    SUBCASE("not listed: exit 0 is then a crash and is restarted") {
        dir.service("svc", sh_command("exit 0") + "success_codes = [3]\n" +
                               restart_table("on_crash", "50ms", 1.0, 1));
        Daemon pkitd(dir);
        pkitd.wait_ready();
        Client client = pkitd.client();
        json s = wait_status(client, "svc", state_is("failed"), 5s, "restarts exhausted");
        CHECK(s["stopped"] == "restarts_exhausted");
        CHECK(s["run"] == 2);
        CHECK(last_exit(s)["code"] == 0);
        CHECK(pkitd.stop() == 0);
    }
}
