// The control server's conversation with one client: NDJSON framing, the id echoed,
// one reply per request in order, and the ways a connection ends.

#include <filesystem>
#include <string>

#include "proto/reply.hpp"
#include "tests/unit/shell/control/test_control_server_support.hpp"

namespace pkit::shell::test {

namespace {

struct Fixture {
    TestLoop loop;
    TempDir dir;
    FakeHandler handler;
    std::unique_ptr<ControlServer> server;
    std::string path = dir.path() + "/pkitd.sock";

    Fixture() { server = open_server(loop, path, handler); }
    ~Fixture() {
        server.reset();
        CHECK(loop.close() == 0);
    }
};

}  // namespace

TEST_CASE("a ping is answered with its id echoed, whatever the id") {
    Fixture f;
    RawClient client(f.loop, f.path);
    REQUIRE(client.write("{\"id\":1,\"cmd\":\"ping\"}\n"));
    CHECK(client.read_line() == "{\"id\":1,\"ok\":true,\"result\":{\"pong\":true}}");
    REQUIRE(client.write("{\"id\":{\"a\":[1,\"x\"]},\"cmd\":\"ping\"}\n{\"cmd\":\"ping\"}\n"));
    CHECK(parse_line(*client.read_line())["id"] == proto::json{{"a", {1, "x"}}});
    CHECK(parse_line(*client.read_line())["id"].is_null());
}

TEST_CASE("requests split across writes and batched in one write are framed by newlines") {
    Fixture f;
    RawClient client(f.loop, f.path);
    REQUIRE(client.write("{\"id\":\"a\",\"cm"));
    CHECK_FALSE(client.line_within(20ms));
    REQUIRE(client.write("d\":\"ping\"}\n{\"id\":\"b\",\"cmd\":\"ping\"}\n{\"id\":\"c\","));
    CHECK(parse_line(*client.read_line())["id"] == "a");
    CHECK(parse_line(*client.read_line())["id"] == "b");
    REQUIRE(client.write("\"cmd\":\"ping\"}\n"));
    CHECK(parse_line(*client.read_line())["id"] == "c");
    CHECK(f.handler.requests == 3);
}

TEST_CASE("replies come in request order even when the first is answered later") {
    Fixture f;
    RawClient client(f.loop, f.path);
    REQUIRE(client.write("{\"id\":1,\"cmd\":\"status\"}\n{\"id\":2,\"cmd\":\"ping\"}\n"));
    REQUIRE(f.loop.run_until([&] { return f.handler.held.size() == 1; }));
    // The ping is not even handed over while the status waits for its reply.
    CHECK_FALSE(client.line_within(30ms));
    CHECK(f.handler.requests == 1);
    f.handler.release_one();
    CHECK(parse_line(*client.read_line())["result"]["held"] == true);
    CHECK(parse_line(*client.read_line())["id"] == 2);
}

TEST_CASE("a bad request is answered and the connection stays open") {
    Fixture f;
    RawClient client(f.loop, f.path);
    REQUIRE(
        client.write("not json\n{\"id\":5,\"cmd\":\"frobnicate\"}\n"
                     "{\"id\":6,\"cmd\":\"start\",\"services\":\"web\"}\n\n"));
    auto not_json = parse_line(*client.read_line());
    CHECK(not_json["ok"] == false);
    CHECK(not_json["error"]["code"] == "bad_request");
    CHECK(not_json["id"].is_null());
    auto unknown = parse_line(*client.read_line());
    CHECK(unknown["error"]["code"] == "unknown_command");
    CHECK(unknown["id"] == 5);
    auto wrong_type = parse_line(*client.read_line());
    CHECK(wrong_type["error"]["message"] == "\"services\" must be an array of strings");
    CHECK(wrong_type["id"] == 6);
    CHECK(parse_line(*client.read_line())["error"]["code"] == "bad_request");  // empty line
    REQUIRE(client.write("{\"id\":7,\"cmd\":\"ping\"}\n"));
    CHECK(parse_line(*client.read_line())["id"] == 7);
    CHECK(f.handler.requests == 1);
}

TEST_CASE("a handler that throws still answers the request, and the connection goes on") {
    Fixture f;
    RawClient client(f.loop, f.path);
    REQUIRE(
        client.write("{\"id\":1,\"cmd\":\"explain\",\"service\":\"x\"}\n"
                     "{\"id\":2,\"cmd\":\"ping\"}\n"));
    auto failed = parse_line(*client.read_line());
    CHECK(failed["id"] == 1);
    CHECK(failed["ok"] == false);
    CHECK(parse_line(*client.read_line())["id"] == 2);
}

TEST_CASE("a line over 1 MiB is answered too_large and the connection closed") {
    Fixture f;
    RawClient client(f.loop, f.path);
    // The rest of the line is read and dropped: the client does not see EPIPE before it
    // can read why.
    CHECK(client.write(std::string(proto::k_max_line_bytes + 100, 'x')));
    auto reply = client.read_line();
    REQUIRE(reply.has_value());
    CHECK(parse_line(*reply)["error"]["code"] == "too_large");
    CHECK(client.wait_closed());
    client.shutdown_write();
    CHECK(f.loop.run_until([&] { return f.handler.disconnected.size() == 1; }));
    CHECK(f.server->connection_count() == 0);
}

TEST_CASE("a line of exactly 1 MiB is still a request") {
    Fixture f;
    RawClient client(f.loop, f.path);
    std::string line = "{\"cmd\":\"ping\",\"id\":\"";
    line += std::string(proto::k_max_line_bytes - line.size() - 2, 'y') + "\"}";
    REQUIRE(line.size() == proto::k_max_line_bytes);
    REQUIRE(client.write(line + "\n"));
    auto reply = client.read_line();
    REQUIRE(reply.has_value());
    CHECK(parse_line(*reply)["ok"] == true);
}

TEST_CASE("a half-closed client gets every reply, then the connection closes") {
    Fixture f;
    RawClient client(f.loop, f.path);
    REQUIRE(
        client.write("{\"id\":1,\"cmd\":\"status\"}\n{\"id\":2,\"cmd\":\"ping\"}\n"
                     "{\"id\":3,\"cmd\":\"ping\"}"));  // the last line lacks its newline
    client.shutdown_write();
    REQUIRE(f.loop.run_until([&] { return f.handler.held.size() == 1; }));
    CHECK_FALSE(client.line_within(20ms));
    f.handler.release_one();
    CHECK(parse_line(*client.read_line())["result"]["held"] == true);
    CHECK(parse_line(*client.read_line())["id"] == 2);
    CHECK(parse_line(*client.read_line())["id"] == 3);
    CHECK(client.wait_closed());
    CHECK(f.loop.run_until([&] { return f.handler.disconnected.size() == 1; }));
}

TEST_CASE("a streaming connection ignores further input and ends with its client") {
    Fixture f;
    RawClient client(f.loop, f.path);
    REQUIRE(client.write("{\"id\":\"e\",\"cmd\":\"events\"}\n{\"id\":2,\"cmd\":\"ping\"}\n"));
    CHECK(parse_line(*client.read_line())["id"] == "e");
    REQUIRE(f.handler.streams.size() == 1);
    auto stream = f.handler.streams.front();
    CHECK(f.server->send(stream, proto::event_line("e", {{"type", "started"}})));
    CHECK(parse_line(*client.read_line())["event"]["type"] == "started");
    REQUIRE(client.write("{\"id\":3,\"cmd\":\"ping\"}\n"));
    CHECK_FALSE(client.line_within(20ms));
    CHECK(f.handler.requests == 1);

    client.shutdown_write();
    CHECK(client.wait_closed());
    REQUIRE(f.loop.run_until([&] { return f.handler.disconnected.size() == 1; }));
    CHECK(f.handler.disconnected.front() == stream);
    CHECK_FALSE(f.server->send(stream, proto::event_line("e", {{"type", "ready"}})));
}

TEST_CASE("a client that goes away is reported once, and sends to it fail") {
    Fixture f;
    {
        RawClient client(f.loop, f.path);
        REQUIRE(client.write("{\"cmd\":\"ping\"}\n"));
        REQUIRE(client.read_line().has_value());
        CHECK(f.server->connection_count() == 1);
    }
    REQUIRE(f.loop.run_until([&] { return f.handler.disconnected.size() == 1; }));
    CHECK(f.server->connection_count() == 0);
    CHECK_FALSE(f.server->send(f.handler.disconnected.front(), "{}\n"));
    uv_run(f.loop.get(), UV_RUN_NOWAIT);
    CHECK(f.handler.disconnected.size() == 1);
}

TEST_CASE("a client gone while its request is handled is reported after the reply") {
    // EOF cannot tell a closed client from a half-closed one, which is still owed its
    // reply: so the connection waits for the reply, whose write then finds no reader.
    Fixture f;
    {
        RawClient client(f.loop, f.path);
        REQUIRE(client.write("{\"cmd\":\"status\"}\n"));
        REQUIRE(f.loop.run_until([&] { return f.handler.held.size() == 1; }));
    }
    CHECK_FALSE(f.loop.run_until([&] { return !f.handler.disconnected.empty(); }, 20ms));
    f.handler.release_one();
    REQUIRE(f.loop.run_until([&] { return f.handler.disconnected.size() == 1; }));
    CHECK(f.server->connection_count() == 0);
}

TEST_CASE("close_all drops every connection and removes the socket file") {
    Fixture f;
    RawClient first(f.loop, f.path);
    RawClient second(f.loop, f.path);
    REQUIRE(first.write("{\"cmd\":\"ping\"}\n"));
    REQUIRE(second.write("{\"cmd\":\"ping\"}\n"));
    REQUIRE(first.read_line().has_value());
    REQUIRE(second.read_line().has_value());
    CHECK(f.server->connection_count() == 2);
    f.server->close_all();
    CHECK(f.server->connection_count() == 0);
    CHECK(first.wait_closed());
    CHECK(second.wait_closed());
    CHECK_FALSE(std::filesystem::exists(f.path));
    f.server->close_all();  // idempotent
    CHECK(f.handler.disconnected.empty());
}

}  // namespace pkit::shell::test
