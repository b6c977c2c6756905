// SPEC §18: the log-file keys of [output], in a service file and in pkitd.toml, their
// resolution to one path per service, and the load-time checks of that path.

#include "tests/unit/config/config_doctest.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>

#include "config/log_file.hpp"
#include "config/spec_diff.hpp"
#include "tests/unit/config/temp_tree.hpp"

using namespace pkit::config;
using namespace pkit::config::test;
using Errors = std::vector<std::string>;

namespace {

std::optional<std::string_view> no_env(std::string_view) {
    return std::nullopt;
}

// The resolved log file of the one service `name` of a loaded tree.
std::optional<LogFileSpec> log_of(const TempTree& tree, std::string_view name,
                                  const VariableLookup& env = no_env) {
    auto loaded = tree.load();
    REQUIRE(loaded);
    const ServiceSpec* spec = loaded->find_service(name);
    REQUIRE(spec != nullptr);
    auto log = resolve_log_file(*spec, loaded->daemon, tree.root().string(),
                                log_file_variables(*spec, loaded->daemon, env));
    REQUIRE(log);
    return *log;
}

}  // namespace

TEST_CASE("a service writes no log file unless it or pkitd.toml names one") {
    TempTree tree;
    tree.service("web", "command = [\"x\"]\n");
    CHECK_FALSE(log_of(tree, "web"));
    CHECK_FALSE(tree.load()->find_service("web")->output.log.allocated());
}

TEST_CASE("[output] file with the defaults of SPEC §18, relative to the configuration") {
    TempTree tree;
    tree.service("web", "command = [\"x\"]\n[output]\nfile = \"logs/../web.log\"\n");
    auto log = log_of(tree, "web");
    REQUIRE(log);
    CHECK(log->path == (tree.root() / "web.log").string());
    CHECK(log->max_size == 10 * 1024 * 1024);
    CHECK(log->keep == 5);
    CHECK(log->format == LogFormat::text);
}

TEST_CASE("[output] dir gives every service DIR/NAME.log and its defaults, a service's own win") {
    TempTree tree;
    tree.daemon(
        "[output]\ndir = \"/var/log/pkit\"\nfile_max_size = \"1MiB\"\nfile_keep = 0\n"
        "file_format = \"json\"\n");
    tree.service("web", "command = [\"x\"]\ninstances = 2\n");
    tree.service("db", "command = [\"x\"]\n[output]\nfile_keep = 1000\nfile_format = \"raw\"\n");
    tree.service("quiet", "command = [\"x\"]\n[output]\nfile = \"\"\n");
    tree.service("own", "command = [\"x\"]\n[output]\nfile = \"/srv/own.log\"\n");
    auto web2 = log_of(tree, "web@2");
    REQUIRE(web2);
    CHECK(web2->path == "/var/log/pkit/web@2.log");
    CHECK(web2->max_size == 1024 * 1024);
    CHECK(web2->keep == 0);
    CHECK(web2->format == LogFormat::json);
    auto db = log_of(tree, "db");
    REQUIRE(db);
    CHECK(db->path == "/var/log/pkit/db.log");
    CHECK(db->keep == 1000);
    CHECK(db->format == LogFormat::raw);
    CHECK(db->max_size == 1024 * 1024);
    CHECK_FALSE(log_of(tree, "quiet"));
    CHECK(log_of(tree, "own")->path == "/srv/own.log");
}

TEST_CASE("a relative [output] dir is taken from the configuration directory") {
    TempTree tree;
    tree.daemon("[output]\ndir = \"log\"\n");
    tree.service("web", "command = [\"x\"]\n");
    CHECK(log_of(tree, "web")->path == (tree.root() / "log/web.log").string());
}

TEST_CASE("`file` expands pkitd's environment, [env], PKIT_SERVICE and PKIT_INSTANCE") {
    TempTree tree;
    tree.daemon("[env]\nAPP = \"shop\"\n");
    tree.service("web",
                 "command = [\"x\"]\ninstances = 3\n[output]\n"
                 "file = \"${PKIT_TEST_LOG_ROOT}/${APP}/${PKIT_SERVICE}-${PKIT_INSTANCE}.log\"\n");
    ::setenv("PKIT_TEST_LOG_ROOT", "/logs", 1);  // the loader's check reads pkitd's own
    auto env = [](std::string_view name) -> std::optional<std::string_view> {
        return name == "PKIT_TEST_LOG_ROOT" ? std::optional<std::string_view>("/logs")
                                            : std::nullopt;
    };
    CHECK(log_of(tree, "web@3", env)->path == "/logs/shop/web@3-3.log");
    ::unsetenv("PKIT_TEST_LOG_ROOT");
}

TEST_CASE("`file` with a variable no source defines is an error at its value") {
    TempTree tree;
    tree.service("web", "command = [\"x\"]\n[output]\nfile = \"${PKIT_TEST_NOWHERE}/x.log\"\n");
    CHECK(tree.errors() == Errors{"services/web.toml:3:8: error: output.file: undefined variable "
                                  "\"PKIT_TEST_NOWHERE\""});
    ServiceSpec spec;
    spec.name = "web";
    spec.output.log = LogFileKeys{.path = "${PKIT_TEST_NOWHERE}/x.log"};
    DaemonSpec daemon;
    auto log =
        resolve_log_file(spec, daemon, "/etc/pkit", log_file_variables(spec, daemon, no_env));
    REQUIRE_FALSE(log);
    CHECK(log.error() == "output.file: undefined variable \"PKIT_TEST_NOWHERE\"");
}

TEST_CASE("bad log-file values of a service are positioned errors") {
    for (const BadCase& c : std::initializer_list<BadCase>{
             {"[output]\nfile_max_size = \"63KiB\"",
              "3:17: error: output.file_max_size: must be at least 64KiB (a rotation every few "
              "lines would be mostly renames)"},
             {"[output]\nfile_keep = 1001",
              "3:13: error: output.file_keep: must be between 0 and 1000, got 1001"},
             {"[output]\nfile_keep = -1",
              "3:13: error: output.file_keep: must be between 0 and 1000, got -1"},
             {"[output]\nfile_format = \"jsonl\"",
              "3:15: error: output.file_format: unknown value \"jsonl\"; did you mean \"json\"?"},
             {"[output]\nfile = 3", "3:8: error: output.file: expected a string, got an integer"},
             {"[output]\nfile = \"${A\"",
              "3:8: error: output.file: \"${\" without a closing \"}\" (at character 1 of the "
              "value)"},
             {"[output]\nfile = \"/var/log/\"",
              "3:8: error: output.file: /var/log/ names a directory, not a file"},
         }) {
        check_bad(c);
    }
}

TEST_CASE("bad [output] values of pkitd.toml are positioned errors") {
    TempTree tree;
    tree.daemon(
        "[output]\nfile_max_size = 1024\nfile_keep = 2000\nfile_format = \"xml\"\n"
        "dirr = \"/x\"\n");
    tree.service("web", "command = [\"x\"]\n");
    CHECK(tree.errors() ==
          Errors{"pkitd.toml:2:17: error: output.file_max_size: must be at least 64KiB (a "
                 "rotation every few lines would be mostly renames)",
                 "pkitd.toml:3:13: error: output.file_keep: must be between 0 and 1000, got 2000",
                 "pkitd.toml:4:15: error: output.file_format: unknown value \"xml\" (expected "
                 "\"text\", \"json\" or \"raw\")",
                 "pkitd.toml:5:1: error: unknown key \"dirr\" in [output]; did you mean \"dir\"?"});
}

TEST_CASE("a log path that is not a regular file is an error at its value") {
    TempTree tree;
    std::filesystem::create_directories(tree.root() / "logs/web.log");
    REQUIRE(::mkfifo((tree.root() / "fifo.log").c_str(), 0600) == 0);
    std::string sock = (tree.root() / "sock.log").string();
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{.sun_family = AF_UNIX, .sun_path = {}};
    REQUIRE(sock.size() < sizeof address.sun_path);
    sock.copy(address.sun_path, sock.size());
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    ::close(fd);
    tree.service("dev", "command = [\"x\"]\n[output]\nfile = \"/dev/null\"\n");
    tree.service("fifo", "command = [\"x\"]\n[output]\nfile = \"fifo.log\"\n");
    tree.service("sock", "command = [\"x\"]\n[output]\nfile = \"sock.log\"\n");
    tree.service("web", "command = [\"x\"]\n[output]\nfile = \"logs/web.log\"\n");
    tree.service("plain", "command = [\"x\"]\n[output]\nfile = \"logs/plain.log\"\n");
    const std::string root = tree.root().string();
    CHECK(tree.errors() ==
          Errors{"services/dev.toml:3:8: error: output.file: \"/dev/null\" is a character "
                 "device, not a regular file",
                 "services/fifo.toml:3:8: error: output.file: \"" + root +
                     "/fifo.log\" is a FIFO, not a regular file",
                 "services/sock.toml:3:8: error: output.file: \"" + root +
                     "/sock.log\" is a socket, not a regular file",
                 "services/web.toml:3:8: error: output.file: \"" + root +
                     "/logs/web.log\" is a directory, not a regular file"});
}

TEST_CASE("under [output] dir, a NAME.log that is not a regular file is an error at dir") {
    TempTree tree;
    tree.daemon("[output]\ndir = \"logs\"\n");
    std::filesystem::create_directories(tree.root() / "logs/web.log");
    tree.service("web", "command = [\"x\"]\n");
    tree.service("db", "command = [\"x\"]\n");
    CHECK(tree.errors() ==
          Errors{"pkitd.toml:2:7: error: output.dir: \"" + tree.root().string() +
                 "/logs/web.log\" is a directory, not a regular file (the log file of web under "
                 "[output] dir)"});
}

TEST_CASE("an [output] dir that is not a directory is an error at its value") {
    TempTree tree;
    tree.daemon("[output]\ndir = \"pkitd.toml\"\n");
    tree.service("web", "command = [\"x\"]\n");
    CHECK(tree.errors() == Errors{"pkitd.toml:2:7: error: output.dir: \"" + tree.root().string() +
                                  "/pkitd.toml\" is a regular file, not a directory"});
}

TEST_CASE("two services writing one log file is an error at the second") {
    TempTree tree;
    tree.service("a", "command = [\"x\"]\n[output]\nfile = \"/tmp/shared.log\"\n");
    tree.service("b", "command = [\"x\"]\n[output]\nfile = \"/tmp/../tmp/shared.log\"\n");
    tree.service("c", "command = [\"x\"]\ninstances = 2\n[output]\nfile = \"/tmp/c.log\"\n");
    CHECK(tree.errors() ==
          Errors{"services/b.toml:3:8: error: output.file: \"/tmp/shared.log\" is already the "
                 "log file of a",
                 "services/c.toml:4:8: error: output.file: \"/tmp/c.log\" is already the log "
                 "file of c@1"});
}

TEST_CASE("a log file that exists as a regular file, or a symbolic link to one, loads") {
    TempTree tree;
    tree.write("logs/web.log", "old line\n");
    std::filesystem::create_symlink(tree.root() / "logs/web.log", tree.root() / "link.log");
    tree.service("web", "command = [\"x\"]\n[output]\nfile = \"logs/web.log\"\n");
    tree.service("db", "command = [\"x\"]\n[output]\nfile = \"link.log\"\n");
    CHECK(tree.errors() == Errors{});
}

TEST_CASE("a change of any log-file key is a change spec_diff names") {
    ServiceSpec a = service_spec("command = [\"x\"]\n");
    ServiceSpec b = service_spec(
        "command = [\"x\"]\n[output]\nfile = \"w.log\"\nfile_max_size = \"1MiB\"\nfile_keep = 2\n"
        "file_format = \"json\"\n");
    std::vector<std::string> keys;
    for (const KeyChange& change : spec_diff(a, b)) {
        keys.push_back(change.key + " = " + change.new_value.value_or("(none)"));
    }
    CHECK(keys == Errors{"output.file = \"w.log\"", "output.file_max_size = \"1MiB\"",
                         "output.file_keep = 2", "output.file_format = \"json\""});
}
