// The control server's output queues: counted in the memory they hold (text plus a
// per-piece overhead), coalesced into few writes, shared pieces sent without copies, and
// a reply that ends its connection.

#include <memory>
#include <string>

#include "proto/reply.hpp"
#include "tests/unit/shell/control/test_control_server_support.hpp"

namespace pkit::shell::test {
namespace {

// Sends stream lines on `stream` until one stays queued after a turn of the loop: the
// kernel's buffers are full and the client is not reading.
void fill_kernel(TestLoop& loop, ControlServer& server, ConnectionId stream,
                 const std::string& line) {
    for (int sent = 0; server.backlog_bytes(stream) == 0; ++sent) {
        REQUIRE(sent < 1'000'000);
        REQUIRE(server.send(stream, line));
        uv_run(loop.get(), UV_RUN_NOWAIT);
    }
}

ConnectionId subscribe(TestLoop& loop, FakeHandler& handler, RawClient& client,
                       const std::string& id) {
    std::size_t before = handler.streams.size();
    REQUIRE(client.write("{\"id\":\"" + id + "\",\"cmd\":\"events\"}\n"));
    REQUIRE(loop.run_until([&] { return handler.streams.size() == before + 1; }));
    return handler.streams.back();
}

}  // namespace

TEST_CASE("a stalled stream's queue counts each piece's overhead, not just its text") {
    TestLoop loop;
    TempDir dir;
    FakeHandler handler;
    std::string path = dir.path() + "/pkitd.sock";
    SocketOptions options;
    options.max_backlog_bytes = 64 * 1024;
    {
        auto server = open_server(loop, path, handler, options);
        RawClient slow(loop, path);
        auto stream = subscribe(loop, handler, slow, "s");
        REQUIRE(slow.read_line().has_value());  // the reply; from here on nothing is read

        const std::string line = "0123456789\n";
        fill_kernel(loop, *server, stream, line);
        const std::size_t start = server->backlog_bytes(stream);
        const std::size_t per_line = line.size() + k_piece_overhead_bytes;
        for (int k = 0; k < 100; ++k) {
            REQUIRE(server->send(stream, line));
        }
        CHECK(server->backlog_bytes(stream) == start + 100 * per_line);

        // Dropped once the counted bytes would pass the bound: after about 600 lines of
        // 11 bytes, where counting text alone would have taken almost 6000.
        std::size_t more = 100;
        while (server->send(stream, line)) {
            ++more;
            REQUIRE(more < 100'000);
        }
        CHECK(start + more * per_line <= options.max_backlog_bytes);
        CHECK(start + (more + 1) * per_line > options.max_backlog_bytes);
        CHECK(server->backlog_bytes(stream) == 0);
        CHECK(loop.run_until([&] { return handler.disconnected.size() == 1; }));
        CHECK(slow.wait_closed());
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("lines queued behind a full socket go out in few writes, all of them, in order") {
    TestLoop loop;
    TempDir dir;
    FakeHandler handler;
    std::string path = dir.path() + "/pkitd.sock";
    {
        auto server = open_server(loop, path, handler);
        RawClient client(loop, path);
        auto stream = subscribe(loop, handler, client, "s");
        REQUIRE(client.read_line().has_value());

        const std::string filler = std::string(99, 'f') + "\n";
        fill_kernel(loop, *server, stream, filler);
        for (int k = 0; k < 5000; ++k) {
            REQUIRE(server->send(stream, "line " + std::to_string(k) + "\n"));
        }
        // One write under way, the 5000 lines waiting for it in the connection's queue:
        // not one write request (with its buffer and bookkeeping) per line.
        CHECK(loop.get()->active_reqs.count <= 2);

        bool in_order = true;
        int next = 0;
        while (next < 5000) {
            auto got = client.read_line();
            REQUIRE(got.has_value());
            if (got->starts_with("line ")) {
                in_order = in_order && *got == "line " + std::to_string(next);
                ++next;
            }
        }
        CHECK(in_order);
        CHECK(loop.run_until([&] { return server->backlog_bytes(stream) == 0; }));
        CHECK(handler.disconnected.empty());
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a line in two shared pieces arrives whole on every connection") {
    TestLoop loop;
    TempDir dir;
    FakeHandler handler;
    std::string path = dir.path() + "/pkitd.sock";
    {
        auto server = open_server(loop, path, handler);
        RawClient first(loop, path);
        RawClient second(loop, path);
        auto a = subscribe(loop, handler, first, "a");
        auto b = subscribe(loop, handler, second, "b");
        REQUIRE(first.read_line().has_value());
        REQUIRE(second.read_line().has_value());

        proto::json event{{"type", "started"}, {"service", "web"}};
        auto body = std::make_shared<const std::string>(proto::stream_body(event));
        CHECK(server->send(a, std::make_shared<const std::string>(proto::event_head("a")), body));
        CHECK(server->send(b, std::make_shared<const std::string>(proto::event_head(7)), body));

        auto line_a = first.read_line();
        auto line_b = second.read_line();
        REQUIRE(line_a.has_value());
        REQUIRE(line_b.has_value());
        CHECK(*line_a + "\n" == proto::event_line("a", event));
        CHECK(*line_b + "\n" == proto::event_line(7, event));
        CHECK(loop.run_until([&] { return body.use_count() == 1; }));  // written, let go
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("reply_and_end sends the reply, then ends the connection without reading on") {
    TestLoop loop;
    TempDir dir;
    FakeHandler handler;
    std::string path = dir.path() + "/pkitd.sock";
    {
        auto server = open_server(loop, path, handler);
        RawClient client(loop, path);
        REQUIRE(client.write("{\"id\":1,\"cmd\":\"status\"}\n{\"id\":2,\"cmd\":\"ping\"}\n"));
        REQUIRE(loop.run_until([&] { return handler.held.size() == 1; }));
        auto connection = handler.held.front();
        handler.held.clear();
        server->reply_and_end(
            connection, proto::error_reply(1, proto::ErrorCode::too_large, "too many subscribers"));
        auto reply = client.read_line();
        REQUIRE(reply.has_value());
        CHECK(parse_line(*reply)["error"]["code"] == "too_large");
        CHECK(client.wait_closed());  // the pipelined ping is never answered
        CHECK(handler.requests == 1);
        client.shutdown_write();
        CHECK(loop.run_until([&] { return handler.disconnected.size() == 1; }));
    }
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
