// The control protocol (SPEC §9) over a raw socket: framing, ids, error codes, and a bad
// client never disturbing pkitd or other connections.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

std::string error_code(const json& reply) {
    return reply.contains("error") ? reply["error"].value("code", "") : "";
}

json read_reply(Client& client) {
    const auto reply = client.read_json(Clock::now() + 5s);
    REQUIRE_MESSAGE(reply.has_value(), "no reply line");
    return *reply;
}

}  // namespace

TEST_CASE("every request gets one reply with the same id") {
    TempDir dir;
    dir.service("svc", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();

    for (const json& id :
         {json("a string"), json(42), json::object({{"nested", {1, 2}}}), json(nullptr)}) {
        json reply = client.request({{"id", id}, {"cmd", "ping"}, {"extra", "ignored"}});
        CHECK(reply["id"] == id);
        CHECK(reply["ok"] == true);
        CHECK(reply["result"]["protocol"] == 1);
        CHECK(reply["result"]["pid"] == pkitd.pid());
    }
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("bad requests get their error code and the connection stays usable") {
    TempDir dir;
    dir.service("svc", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    Client bystander = pkitd.client();
    // Running first: the check below that the failed stop did nothing compares with it.
    wait_status(client, "svc", state_is("running"), 5s, "running");

    client.send_raw("this is not json\n");
    CHECK(error_code(read_reply(client)) == "bad_request");
    client.send_raw("[1, 2, 3]\n");
    CHECK(error_code(read_reply(client)) == "bad_request");
    CHECK(error_code(client.request({{"cmd", 7}})) == "bad_request");
    CHECK(error_code(client.request({{"cmd", "frobnicate"}})) == "unknown_command");
    json unknown = client.request({{"cmd", "stop"}, {"services", {"svc", "nope"}}});
    CHECK(unknown["ok"] == false);
    CHECK(error_code(unknown) == "unknown_service");
    CHECK(error_code(client.request({{"cmd", "logs"}, {"service", "nope"}})) == "unknown_service");

    CHECK(status(client, "svc")["state"] == "running");  // the failed stop did nothing
    CHECK(bystander.command("ping")["ok"] == true);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a line over 1 MiB gets too_large and the connection is closed") {
    TempDir dir;
    dir.service("svc", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    Client bystander = pkitd.client();

    // pkitd may close the connection before the whole line is sent.
    client.try_send_raw("{\"cmd\": \"ping\", \"pad\": \"" + std::string(1100 * 1024, 'x') +
                        "\"}\n");
    CHECK(error_code(read_reply(client)) == "too_large");
    CHECK_FALSE(client.read_line(Clock::now() + 5s).has_value());
    CHECK(client.eof());
    CHECK(bystander.command("ping")["ok"] == true);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a client that shuts down its writing side still gets every reply") {
    TempDir dir;
    dir.service("svc", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();

    client.send_raw(R"({"id": 1, "cmd": "ping"})"
                    "\n"
                    R"({"id": 2, "cmd": "status"})"
                    "\n");
    client.shutdown_write();
    CHECK(read_reply(client)["id"] == 1);
    CHECK(read_reply(client)["id"] == 2);
    CHECK_FALSE(client.read_line(Clock::now() + 5s).has_value());
    CHECK(client.eof());
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a second pkitd on a socket that answers exits 3") {
    TempDir dir;
    dir.service("svc", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    // With the marker, so that anything it wrongly starts is swept at the end.
    const auto second = run_pkitd({"--config", dir.str(), "--socket", pkitd.socket()}, 10s,
                                  {"PKIT_ITEST_MARKER=" + dir.str()});
    CHECK_MESSAGE(second.exit_code == 3, second.all());
    CHECK(pkitd.client().command("ping")["ok"] == true);
    CHECK(pkitd.stop() == 0);
}
