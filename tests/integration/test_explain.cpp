// `explain` (SPEC §9, §10): the policy core's reasoning in words, for a service in
// backoff, one that gave up, and one held by a storm pause (its own guard or the
// daemon's), over the socket and through `pkitctl explain`.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// `explain svc` over the socket: the result object.
json explain(Client& client) {
    json reply = client.request({{"cmd", "explain"}, {"service", "svc"}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    REQUIRE(reply["result"]["text"].is_string());
    REQUIRE(reply["result"]["facts"].is_object());
    return reply["result"];
}

// `pkitctl explain svc`'s output, which must say the same in words.
std::string ctl_explain(const Daemon& pkitd) {
    const auto result = run_ctl({"--socket", pkitd.socket(), "explain", "svc"});
    CHECK_MESSAGE(result.exit_code == 0, result.all());
    return result.out;
}

bool has(const std::string& text, const std::string& words) {
    return text.find(words) != std::string::npos;
}

}  // namespace

TEST_CASE("explain: a service in backoff names its backoff step and the restart window") {
    TempDir dir;
    const std::string restart =
        "[restart]\nbackoff_initial = \"1s\"\nbackoff_factor = 10.0\n"
        "max_backoff = \"60s\"\nmax_restarts = 5\nwithin = \"10m\"\n"
        "jitter = false\n";
    dir.service("svc", sh_command("exit 1") + restart);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    // The second restart waits 10 s: long enough to read it at leisure.
    json s = wait_status(
        client, "svc", [](const json& st) { return st["state"] == "backoff" && st["run"] == 2; },
        10s, "the second backoff");

    json result = explain(client);
    const std::string text = result["text"].get<std::string>();
    INFO("explain: " << text << "\nfacts: " << result["facts"].dump());
    CHECK(has(text, "backoff step 1"));
    CHECK(has(text, "restart 2 in "));
    CHECK(has(text, "2 of 5 restarts in the 10m window"));
    CHECK(has(text, "exit 1"));
    CHECK(result["facts"]["backoff_step"] == 1);
    CHECK(result["facts"]["state"] == "backoff");
    CHECK(result["facts"]["next_restart_in"].get<double>() > 5.0);
    CHECK(has(ctl_explain(pkitd), "backoff step 1"));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("explain: a service that gave up names the give_up_when predicate that matched") {
    TempDir dir;
    dir.service("svc", sh_command("exit 78") + restart_table("on_crash", "50ms") +
                           "[give_up_when]\nexit_codes = [78]\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "svc", state_is("failed"), 5s, "gave up");

    json result = explain(client);
    const std::string text = result["text"].get<std::string>();
    INFO("explain: " << text);
    CHECK(has(text, "gave up"));
    CHECK(has(text, "exit 78 matched give_up_when.exit_codes"));
    CHECK(result["facts"]["stopped"] == "gave_up");
    const std::string cli = ctl_explain(pkitd);
    INFO("pkitctl explain: " << cli);
    CHECK(has(cli, "gave up"));
    CHECK(has(cli, "give_up_when.exit_codes"));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("explain: a service in a storm pause says until when") {
    TempDir dir;
    std::string why;  // the words that name the guard that tripped
    SUBCASE("its own storm guard") {
        // A threshold of 1: the first crash trips it.
        dir.service("svc", sh_command("exit 1") + restart_table("on_crash", "50ms") +
                               "[storm]\nthreshold = 1.0\npause = \"30s\"\n");
        why = "score 1.0 reached threshold 1.0";
    }
    SUBCASE("the daemon-wide storm guard") {
        dir.daemon_config("[storm]\nthreshold = 1.0\npause = \"30s\"\n");
        dir.service("svc", sh_command("exit 1") + restart_table("on_crash", "50ms"));
        why = "the daemon-wide storm guard tripped (threshold 1.0)";
    }
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json s = wait_status(client, "svc", state_is("storm_pause"), 5s, "a storm pause");
    CHECK(s["run"] == 1);

    json result = explain(client);
    const std::string text = result["text"].get<std::string>();
    INFO("explain: " << text << "\nfacts: " << result["facts"].dump());
    CHECK(has(text, "storm pause until "));
    CHECK(has(text, why));
    CHECK(result["facts"]["state"] == "storm_pause");
    CHECK(result["facts"]["next_restart_in"].get<double>() > 20.0);
    CHECK(has(ctl_explain(pkitd), "storm pause until "));
    CHECK(pkitd.stop() == 0);
}
