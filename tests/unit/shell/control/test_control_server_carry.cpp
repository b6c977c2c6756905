// A connection carried across an upgrade in place (SPEC §16): what one server hands
// over (the rest of a reply cut in the middle, the request in flight, bytes received
// and not handled) lets a second server go on exactly where the first stood.

#include <unistd.h>

#include <string>

#include "proto/reply.hpp"
#include "tests/unit/shell/control/test_control_server_support.hpp"

namespace pkit::shell::test {

TEST_CASE("a carried connection goes on in a second server where the first stood") {
    TestLoop loop;
    TempDir dir;
    FakeHandler first_handler;
    // A reply far larger than the socket holds, below the mark where requests pause.
    first_handler.ping_reply_bytes = 4 * 1024 * 1024;
    SocketOptions options;
    options.max_backlog_bytes = 64 * 1024 * 1024;
    auto first = open_server(loop, dir.path() + "/first.sock", first_handler, options);
    RawClient client(loop, dir.path() + "/first.sock");
    REQUIRE(
        client.write("{\"id\":1,\"cmd\":\"ping\"}\n{\"id\":2,\"cmd\":\"status\"}\n"
                     "{\"id\":3,\"cmd\":\"ping\"}\n{\"id\":4,\"cmd\":\"pi"));
    REQUIRE(loop.run_until([&] { return first_handler.held.size() == 1; }));

    auto carried = first->carry();
    REQUIRE(carried.size() == 1);
    CarriedConnection connection = carried.front().second;
    CHECK(connection.request == "{\"id\":2,\"cmd\":\"status\"}");
    CHECK(connection.input == "{\"id\":3,\"cmd\":\"ping\"}\n{\"id\":4,\"cmd\":\"pi");
    // Part of ping 1's reply is in the socket already; the rest is handed over.
    CHECK(connection.output.size() > 0);
    CHECK(connection.output.size() < first_handler.ping_reply_bytes);
    CHECK(connection.output.ends_with("true}}\n"));
    CHECK_FALSE(connection.finishing);
    CHECK(connection.served);
    // The next pkitd gets the descriptor through the exec; here, a copy of it, and the
    // first server goes away as the old pkitd does.
    connection.fd = ::dup(connection.fd);
    REQUIRE(connection.fd >= 0);
    first.reset();

    FakeHandler second_handler;
    auto second = open_server(loop, dir.path() + "/second.sock", second_handler);
    auto id = second->adopt_connection(connection);
    REQUIRE(id.has_value());
    second_handler.held.push_back(*id);  // the status in flight, as the handler registers it
    second->resume_carried(*id);

    auto one = client.read_line();
    REQUIRE(one.has_value());
    proto::json reply = parse_line(*one);
    CHECK(reply["id"] == 1);
    CHECK(reply["result"]["pad"].get<std::string>().size() == first_handler.ping_reply_bytes);
    // Ping 3 waits behind the status in flight.
    CHECK_FALSE(client.line_within(30ms));
    second_handler.release_one();
    CHECK(parse_line(*client.read_line())["result"]["held"] == true);
    CHECK(parse_line(*client.read_line())["id"] == 3);
    REQUIRE(client.write("ng\"}\n"));
    CHECK(parse_line(*client.read_line())["id"] == 4);
    CHECK(second_handler.requests == 2);  // pings 3 and 4: the status came handled
    second.reset();
    CHECK(loop.close() == 0);
}

TEST_CASE("a streaming connection is not carried, an idle one is") {
    TestLoop loop;
    TempDir dir;
    FakeHandler handler;
    auto server = open_server(loop, dir.path() + "/pkitd.sock", handler);
    RawClient streaming(loop, dir.path() + "/pkitd.sock");
    REQUIRE(streaming.write("{\"id\":1,\"cmd\":\"events\"}\n"));
    REQUIRE(streaming.read_line().has_value());
    RawClient idle(loop, dir.path() + "/pkitd.sock");
    REQUIRE(idle.write("{\"id\":2,\"cmd\":\"ping\"}\n"));
    REQUIRE(idle.read_line().has_value());
    auto carried = server->carry();
    REQUIRE(carried.size() == 1);
    CHECK(carried.front().second.request.empty());
    CHECK(carried.front().second.input.empty());
    CHECK(carried.front().second.output.empty());
    server.reset();
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
