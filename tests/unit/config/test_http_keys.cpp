// pkitd.toml [http] and the service key affects_readiness (SPEC §2, §11).

#include "tests/unit/config/config_doctest.hpp"

#include "tests/unit/config/temp_tree.hpp"

using namespace pkit::config;
using namespace pkit::config::test;
using Errors = std::vector<std::string>;

TEST_CASE("[http] listen: host:port, [v6]:port or a name; off without the table") {
    for (const char* listen : {"0.0.0.0:9100", "[::1]:9100", "localhost:80"}) {
        TempTree tree;
        tree.daemon(std::string("[http]\nlisten = \"") + listen + "\"\n");
        tree.service("web", "command = [\"x\"]\n");
        auto loaded = tree.load();
        REQUIRE_MESSAGE(loaded, listen);
        CHECK(loaded->daemon.http.listen == std::optional<std::string>(listen));
    }
    TempTree none;
    none.service("web", "command = [\"x\"]\n");
    CHECK_FALSE(none.load()->daemon.http.listen);
}

TEST_CASE("[http] bad values are positioned errors") {
    TempTree tree;
    tree.daemon("[http]\nlisten = \"9100\"\n");
    CHECK(tree.errors() ==
          Errors{"pkitd.toml:2:10: error: http.listen: \"9100\" is not \"host:port\" (e.g. "
                 "\"127.0.0.1:8080\")"});
    TempTree port;
    port.daemon("[http]\nlisten = \"0.0.0.0:99999\"\n");
    CHECK(port.errors() ==
          Errors{"pkitd.toml:2:10: error: http.listen: port \"99999\" is not a number from 1 to "
                 "65535"});
    TempTree missing;
    missing.daemon("[http]\nport = 9100\n");
    CHECK(missing.errors() == Errors{"pkitd.toml:1:1: error: missing key \"listen\" in [http]",
                                     "pkitd.toml:2:1: error: unknown key \"port\" in [http]"});
}

TEST_CASE("affects_readiness: default true, a bool") {
    CHECK(service_spec("command = [\"x\"]\n").affects_readiness);
    CHECK_FALSE(service_spec("command = [\"x\"]\naffects_readiness = false\n").affects_readiness);
    CHECK(service_errors("command = [\"x\"]\naffects_readiness = \"no\"\n") ==
          Errors{"services/web.toml:2:21: error: affects_readiness: expected true or false, got "
                 "a string"});
}
