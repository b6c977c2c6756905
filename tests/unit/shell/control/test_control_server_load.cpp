// The control server under load: a client that stops reading costs only itself, and a
// thousand clients at once are all served.

#include <sys/resource.h>

#include <chrono>
#include <memory>
#include <vector>

#include "proto/reply.hpp"
#include "tests/unit/shell/control/test_control_server_support.hpp"

namespace pkit::shell::test {

TEST_CASE("a client that stops reading is dropped; another's ping is answered meanwhile") {
    TestLoop loop;
    TempDir dir;
    FakeHandler handler;
    std::string path = dir.path() + "/pkitd.sock";
    SocketOptions options;
    options.max_backlog_bytes = 1024 * 1024;
    {
        auto server = open_server(loop, path, handler, options);
        RawClient slow(loop, path);
        RawClient quick(loop, path);
        REQUIRE(slow.write("{\"id\":\"s\",\"cmd\":\"events\"}\n"));
        REQUIRE(loop.run_until([&] { return handler.streams.size() == 1; }));
        auto stream = handler.streams.front();

        // Stream far more than the kernel's buffer plus the bound, never reading.
        std::string event =
            proto::event_line("s", {{"type", "x"}, {"pad", std::string(16384, 'p')}});
        int sent = 0;
        bool dropped = false;
        for (; sent < 1000 && !dropped; ++sent) {
            dropped = !server->send(stream, event);
            uv_run(loop.get(), UV_RUN_NOWAIT);
        }
        CHECK(dropped);
        CHECK(sent < 1000);
        CHECK(loop.run_until([&] { return handler.disconnected.size() == 1; }));
        CHECK(handler.disconnected.front() == stream);

        auto before = std::chrono::steady_clock::now();
        REQUIRE(quick.write("{\"id\":\"q\",\"cmd\":\"ping\"}\n"));
        auto reply = quick.read_line();
        REQUIRE(reply.has_value());
        CHECK(parse_line(*reply)["id"] == "q");
        CHECK(std::chrono::steady_clock::now() - before < std::chrono::seconds(1));
        CHECK(slow.wait_closed());
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("pipelined requests with big replies all get them, in order, however slow the reader") {
    TestLoop loop;
    TempDir dir;
    FakeHandler handler;
    handler.ping_reply_bytes = 300 * 1024;  // a status of a thousand services
    std::string path = dir.path() + "/pkitd.sock";
    SocketOptions options;
    options.max_backlog_bytes = 1024 * 1024;
    {
        auto server = open_server(loop, path, handler, options);
        RawClient client(loop, path);
        // 20 replies are 6 MB: six times the bound, far more than the kernel buffers.
        std::string requests;
        for (int i = 0; i < 20; ++i) {
            requests += "{\"id\":" + std::to_string(i) + ",\"cmd\":\"ping\"}\n";
        }
        REQUIRE(client.write(requests));
        client.shutdown_write();
        // Not reading for a while: the server pauses instead of dropping the client.
        for (int k = 0; k < 20; ++k) {
            uv_run(loop.get(), UV_RUN_NOWAIT);
        }
        CHECK(handler.requests < 20);
        CHECK(handler.disconnected.empty());
        for (int i = 0; i < 20; ++i) {
            auto reply = client.read_line();
            REQUIRE(reply.has_value());
            auto parsed = parse_line(*reply);
            CHECK(parsed["id"] == i);
            CHECK(parsed["result"]["pad"].get<std::string>().size() == 300 * 1024);
        }
        CHECK(client.wait_closed());
        CHECK(handler.requests == 20);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a thousand concurrent connections are all served") {
    // Both ends of every connection live in this process: two descriptors each.
    rlimit limit{};
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &limit) == 0);
    if (limit.rlim_cur < 2200 && limit.rlim_max >= 2200) {
        limit.rlim_cur = 2200;
        ::setrlimit(RLIMIT_NOFILE, &limit);
    }
    std::size_t clients = limit.rlim_cur >= 2200 ? 1000 : (limit.rlim_cur - 100) / 2;
    if (clients < 1000) {
        MESSAGE("only ", clients, " descriptors pairs available; testing that many");
    }

    TestLoop loop;
    TempDir dir;
    FakeHandler handler;
    std::string path = dir.path() + "/pkitd.sock";
    {
        auto server = open_server(loop, path, handler);
        std::vector<std::unique_ptr<RawClient>> connections;
        for (std::size_t i = 0; i < clients; ++i) {
            connections.push_back(std::make_unique<RawClient>(loop, path));
        }
        for (std::size_t i = 0; i < clients; ++i) {
            REQUIRE(
                connections[i]->write("{\"id\":" + std::to_string(i) + ",\"cmd\":\"status\"}\n"));
        }
        // Every request is with the handler at once: none waits for another client.
        REQUIRE(loop.run_until([&] { return handler.held.size() == clients; }));
        CHECK(server->connection_count() == clients);
        while (!handler.held.empty()) {
            handler.release_one();
        }
        for (std::size_t i = 0; i < clients; ++i) {
            auto reply = connections[i]->read_line();
            REQUIRE(reply.has_value());
            CHECK(parse_line(*reply)["ok"] == true);
        }
        connections.clear();
        CHECK(loop.run_until([&] { return server->connection_count() == 0; }));
        CHECK(handler.disconnected.size() == clients);
    }
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
