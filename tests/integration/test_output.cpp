// Output tails (SPEC §4) through the `logs` command: bounded by max_lines and
// max_bytes dropping the oldest, `truncated`, the previous run's tail, a last line
// without newline, and the stream of each line.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

json logs(Client& client, json args) {
    args["cmd"] = "logs";
    args["service"] = "svc";
    json reply = client.request(args);
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    return reply["result"];
}

// Starts pkitd on `dir` and waits until `svc` is done.
void run_to_done(Daemon& pkitd) {
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "svc", state_is("done"), 5s, "the run ends cleanly");
}

}  // namespace

TEST_CASE("max_lines keeps the last lines of a run and sets truncated") {
    TempDir dir;
    dir.service("svc", sh_command("for i in $(seq 1 20); do echo line-$i; done") +
                           "[output]\nmax_lines = 5\nforward = \"none\"\n");
    Daemon pkitd(dir);
    run_to_done(pkitd);
    Client client = pkitd.client();

    json result = logs(client, {{"lines", 100}});
    const std::vector<std::string> expected{"line-16", "line-17", "line-18", "line-19", "line-20"};
    CHECK(texts(result) == expected);
    CHECK(result["truncated"] == true);
    CHECK(result["run"] == 1);
    SUBCASE("`lines` asks for fewer: the last ones") {
        const std::vector<std::string> last_two{"line-19", "line-20"};
        CHECK(texts(logs(client, {{"lines", 2}})) == last_two);
    }
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("max_bytes bounds the tail by line text, newlines not counted") {
    TempDir dir;
    // 20 lines of 10 characters; 35 bytes hold the last 3.
    dir.service("svc", sh_command("for i in $(seq 1 20); do printf 'line-%05d\\n' $i; done") +
                           "[output]\nmax_bytes = 35\nforward = \"none\"\n");
    Daemon pkitd(dir);
    run_to_done(pkitd);
    Client client = pkitd.client();

    json result = logs(client, {{"lines", 100}});
    const std::vector<std::string> expected{"line-00018", "line-00019", "line-00020"};
    CHECK(texts(result) == expected);
    CHECK(result["truncated"] == true);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a tail within its bounds is not truncated and keeps a last line without newline") {
    TempDir dir;
    dir.service("svc", sh_command("echo out-1; echo err-1 >&2; printf 'no-newline'") +
                           "[output]\nforward = \"none\"\n");
    Daemon pkitd(dir);
    run_to_done(pkitd);
    Client client = pkitd.client();

    json result = logs(client, json::object());
    CHECK(result["truncated"] == false);
    // The two pipes are read independently: order holds within a stream only.
    std::vector<std::string> out;
    std::vector<std::string> err;
    for (json line : result["lines"]) {
        CHECK(line["at"].is_number());
        (line["stream"] == "stderr" ? err : out).push_back(line["text"].get<std::string>());
    }
    CHECK(out == std::vector<std::string>{"out-1", "no-newline"});
    CHECK(err == std::vector<std::string>{"err-1"});
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("previous gives the tail of the run before the latest") {
    TempDir dir;
    const std::string flag = dir.file("ran-once");
    dir.service("svc", sh_command("if [ -e " + flag + " ]; then echo second; exec sleep 1000; " +
                                  "else touch " + flag + "; echo first; exit 1; fi") +
                           restart_table("on_crash", "50ms") + "[output]\nforward = \"none\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();

    wait_status(client, "svc", run_at_least(2), 5s, "the second run");
    const std::vector<std::string> second{"second"};
    wait_for([&] { return texts(logs(client, json::object())) == second; }, 5s,
             "the second run's output", [&] { return logs(client, json::object()).dump(); });
    json previous = logs(client, {{"previous", true}});
    CHECK(texts(previous) == std::vector<std::string>{"first"});
    CHECK(previous["run"] == 1);
    CHECK(logs(client, json::object())["run"] == 2);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("previous with a single run gives no lines and a null run") {
    TempDir dir;
    dir.service("svc", sh_command("echo only; exec sleep 1000") + "[output]\nforward = \"none\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();

    const std::vector<std::string> only{"only"};
    wait_for([&] { return texts(logs(client, json::object())) == only; }, 5s, "the run's output",
             [&] { return logs(client, json::object()).dump(); });
    json previous = logs(client, {{"previous", true}});
    CHECK(previous["lines"].empty());
    CHECK(previous["run"].is_null());
    CHECK(pkitd.stop() == 0);
}
