// Nesting that a file or a client controls never costs pkitd its stack (issue 44): a
// configuration nested as deep as a file can hold is refused with a positioned error by
// `pkitd --check`, `pkitctl check` and a reload, which changes nothing, and pkitd goes
// on; a request nested deeper than 64 levels gets bad_request on a connection that
// stays usable. (A million levels of variables are 6 MB, over the 1 MiB a file may
// hold: the loader's own unit tests and the fuzz replays take those.)

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// Levels of ${A:-...} that fit a file of 1 MiB with its key: six bytes a level.
constexpr std::size_t k_file_levels = 174000;

std::string repeat(std::string_view part, std::size_t times) {
    std::string out;
    out.reserve(part.size() * times);
    for (std::size_t i = 0; i < times; ++i) {
        out += part;
    }
    return out;
}

std::string nested_variables(std::size_t levels) {
    return repeat("${A:-", levels) + "x" + std::string(levels, '}');
}

// A file of services/ (or pkitd.toml) and the error line loading it must give, after
// the file's path.
struct DeepFile {
    std::string what;
    std::string name;  // "n" for services/n.toml; "pkitd" for pkitd.toml
    std::string text;
    std::string error;  // ":LINE:COL: error: MESSAGE"
};

const std::string k_variables_error =
    ": variables nested more than 32 deep (at character 161 of the value)";
const std::string k_toml_error =
    ": error: nested more than 32 deep (each part of a table's name or of a dotted key, and "
    "each array, is one level)";

std::vector<DeepFile> deep_files() {
    const std::string deep = nested_variables(k_file_levels);
    return {
        {"variables in command", "n", "command = [\"/bin/echo\", \"" + deep + "\"]\n",
         ":1:25: error: command" + k_variables_error},
        {"variables in env", "n", "command = [\"/bin/true\"]\n[env]\nV = \"" + deep + "\"\n",
         ":3:5: error: env.V" + k_variables_error},
        {"variables in a probe target", "n",
         "command = [\"/bin/true\"]\n[ready]\ntcp = \"" + deep + "\"\n",
         ":3:7: error: ready.tcp" + k_variables_error},
        {"variables in pkitd.toml's [env]", "pkitd", "[env]\nV = \"" + deep + "\"\n",
         ":2:5: error: env.V" + k_variables_error},
        {"a dotted key of 500,000 parts", "n",
         "command = [\"/bin/true\"]\nenv" + repeat(".a", 500000) + " = \"x\"\n",
         ":2:67" + k_toml_error},
        {"arrays 500,000 deep", "n",
         "command = " + std::string(500000, '[') + std::string(500000, ']') + "\n",
         ":1:42" + k_toml_error},
    };
}

std::string path_of(const TempDir& dir, const DeepFile& file) {
    return file.name == "pkitd" ? dir.file("pkitd.toml") : dir.file("services/n.toml");
}

void write_deep(const TempDir& dir, const DeepFile& file) {
    REQUIRE(file.text.size() <= 1024 * 1024);  // within the loader's limit for a file
    write_file(path_of(dir, file), file.text);
}

}  // namespace

TEST_CASE("pkitd --check and pkitctl check give the positioned error for nesting past 32") {
    for (const DeepFile& file : deep_files()) {
        CAPTURE(file.what);
        TempDir dir;
        dir.service("a", runner_toml());
        write_deep(dir, file);
        const std::string expected = path_of(dir, file) + file.error + "\n";
        for (const auto& result :
             {run_pkitd({"--check", "--config", dir.str()}), run_ctl({"check", dir.str()})}) {
            CHECK_MESSAGE(result.exit_code == 2, result.all());  // not 139, a crash
            CHECK_MESSAGE(result.err.find(expected) != std::string::npos, result.err);
        }
    }
}

TEST_CASE("a reload of a file nested as deep as a file can hold changes nothing and pkitd lives") {
    TempDir dir;
    dir.service("a", runner_toml());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    const json running = wait_running(client, "a");
    const auto pid = running["pid"].get<int>();
    for (const DeepFile& file : deep_files()) {
        CAPTURE(file.what);
        write_deep(dir, file);
        CommandResult r = ctl(pkitd, {"reload"});
        CHECK_MESSAGE(r.exit_code == 1, r.all());
        CHECK_MESSAGE(r.err.find(path_of(dir, file) + file.error + "\n") != std::string::npos,
                      r.err);
        // Nothing changed: the old service runs on, the same process; pkitd answers.
        CHECK(client.command("ping")["ok"] == true);
        json after = status(client, "a");
        CHECK(after["state"] == "running");
        CHECK(after["pid"] == pid);
        CHECK(client.command("status")["result"]["services"].size() == 1);
        if (file.name == "pkitd") {
            dir.daemon_config("");
        } else {
            fs::remove(path_of(dir, file));
        }
    }
    // And a reload of a good tree still works.
    dir.service("b", runner_toml("1001"));
    reload(client);
    wait_running(client, "b");
    CHECK(status(client, "a")["pid"] == pid);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a request nested more than 64 deep is bad_request and the connection goes on") {
    TempDir dir;
    dir.service("a", runner_toml());
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    // Within the 1 MiB a line may hold: half a million levels, and just past the bound.
    for (std::size_t levels : {std::size_t{500000}, std::size_t{65}}) {
        CAPTURE(levels);
        client.send_raw(R"({"cmd":"status","id":7,"x":)" + std::string(levels, '[') +
                        std::string(levels, ']') + "}\n");
        auto line = client.read_json(Clock::now() + 10s);
        REQUIRE(line.has_value());
        CHECK((*line)["ok"] == false);
        CHECK((*line)["error"]["code"] == "bad_request");
        CHECK((*line)["error"]["message"] == "the request is nested more than 64 levels deep");
        // The same connection is served on.
        CHECK(client.command("ping")["ok"] == true);
    }
    // 64 levels are a request like any other.
    client.send_raw(R"({"cmd":"status","id":8,"x":)" + std::string(64, '[') + std::string(64, ']') +
                    "}\n");
    auto line = client.read_json(Clock::now() + 10s);
    REQUIRE(line.has_value());
    CHECK((*line)["ok"] == true);
    CHECK(status(client, "a")["state"] == "running");
    CHECK(pkitd.stop() == 0);
}
