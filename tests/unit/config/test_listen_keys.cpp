// [[listen]] entries and [restart] order (SPEC §14): what the loader reads, and one
// exact diagnostic for each malformed entry.

#include "tests/unit/config/config_doctest.hpp"

#include "tests/unit/config/temp_tree.hpp"

using namespace pkit::config::test;

TEST_CASE("[[listen]] entries read in file order") {
    ServiceSpec spec = service_spec(
        "command = [\"x\"]\n"
        "[[listen]]\ntcp = \"127.0.0.1:8080\"\nname = \"http\"\nbacklog = 16\n"
        "[[listen]]\nudp = \"[::]:53\"\n"
        "[[listen]]\nunix = \"/run/web.sock\"\nmode = \"0600\"\nowner = \"www\"\ngroup = 33\n");
    REQUIRE(spec.listen->size() == 3);
    const ListenSpec& tcp = (*spec.listen)[0];
    CHECK(tcp.kind == ListenKind::tcp);
    CHECK(tcp.host == "127.0.0.1");
    CHECK(tcp.port == 8080);
    CHECK(tcp.name == "http");
    CHECK(tcp.backlog == 16);
    CHECK(tcp.line == 2);
    const ListenSpec& udp = (*spec.listen)[1];
    CHECK(udp.kind == ListenKind::udp);
    CHECK(udp.host == "::");
    CHECK(udp.port == 53);
    CHECK(udp.name.empty());  // the service's name, given by pkitd
    CHECK(udp.backlog == 4096);
    const ListenSpec& unix_socket = (*spec.listen)[2];
    CHECK(unix_socket.kind == ListenKind::unix_);
    CHECK(unix_socket.address == "/run/web.sock");
    CHECK(unix_socket.mode == 0600);
    CHECK(unix_socket.owner.name == "www");
    CHECK(unix_socket.group.id == 33u);
    CHECK(service_spec("command = [\"x\"]\n[[listen]]\nunix = \"/a\"\n").listen->front().mode ==
          0660);
}

TEST_CASE("an entry moved in its file is the same entry; a changed one is not") {
    ServiceSpec a = service_spec("command = [\"x\"]\n[[listen]]\ntcp = \"127.0.0.1:80\"\n");
    ServiceSpec b =
        service_spec("command = [\"x\"]\n\n# moved\n[[listen]]\ntcp = \"127.0.0.1:80\"\n");
    ServiceSpec c = service_spec("command = [\"x\"]\n[[listen]]\ntcp = \"127.0.0.1:81\"\n");
    CHECK(*a.listen == *b.listen);
    CHECK_FALSE(*a.listen == *c.listen);
    CHECK(service_spec("command = [\"x\"]\n").listen.allocated() == false);
}

TEST_CASE("[restart] order") {
    CHECK(service_spec("command = [\"x\"]\n").restart.order == RestartOrder::stop_first);
    CHECK(service_spec("command = [\"x\"]\n[restart]\norder = \"start_first\"\n").restart.order ==
          RestartOrder::start_first);
}

TEST_CASE("bad [[listen]] entries and orders") {
    for (const BadCase& c : std::initializer_list<BadCase>{
             {"[[listen]]\nunix = \"/run/x.sock\"\nmode = \"0999\"",
              "4:8: error: listen.mode: expected an octal mode string like \"0660\", got "
              "\"0999\""},
             {"[[listen]]\nunix = \"/run/x.sock\"\nmode = 660",
              "4:8: error: listen.mode: expected an octal mode string like \"0660\", got an "
              "integer"},
             {"[[listen]]\nname = \"x\"",
              "2:1: error: listen: missing \"tcp\", \"udp\" or "
              "\"unix\""},
             {"[[listen]]\ntcp = \"127.0.0.1:80\"\nudp = \"127.0.0.1:80\"",
              "4:1: error: listen.udp: an entry is one socket: give one of \"tcp\", \"udp\" "
              "or \"unix\""},
             {"[[listen]]\ntcp = \"localhost:80\"",
              "3:7: error: listen.tcp: \"localhost\" is not a numeric address (\"0.0.0.0:80\", "
              "\"[::]:80\"); names are not resolved here"},
             {"[[listen]]\ntcp = \"127.0.0.1:0\"",
              "3:7: error: listen.tcp: port \"0\" is not a number from 1 to 65535"},
             {"[[listen]]\nunix = \"run/x.sock\"",
              "3:8: error: listen.unix: \"run/x.sock\" is not an absolute path"},
             {"[[listen]]\ntcp = \"127.0.0.1:80\"\nmode = \"0600\"",
              "4:1: error: listen.mode: only a \"unix\" socket has a mode"},
             {"[[listen]]\ntcp = \"127.0.0.1:80\"\nname = \"a:b\"",
              "4:8: error: listen.name: a name has at most 255 characters and no \":\""},
             {"[[listen]]\ntcp = \"127.0.0.1:80\"\nbacklog = 0",
              "4:11: error: listen.backlog: must be at least 1, got 0"},
             {"[[listen]]\ntcp = \"127.0.0.1:80\"\n[[listen]]\ntcp = \"127.0.0.1:80\"",
              "4:1: error: listen: \"127.0.0.1:80\" is already declared by an earlier entry"},
             {"[[listen]]\ntcp = \"127.0.0.1:80\"\nport = 80",
              "4:1: error: unknown key \"port\" in [listen]"},
             {"listen = \"127.0.0.1:80\"",
              "2:10: error: listen: expected an array of tables ([[listen]]), got a string"},
             {"type = \"oneshot\"\n[restart]\norder = \"start_first\"",
              "4:9: error: restart.order: \"start_first\" overlaps an old run with a new one "
              "until the new one is ready, and a \"oneshot\" job is never ready while it runs; "
              "use \"stop_first\""},
             {"[restart]\norder = \"start-first\"",
              "3:9: error: restart.order: unknown value \"start-first\"; did you mean "
              "\"start_first\"?"},
         }) {
        check_bad(c);
    }
}
