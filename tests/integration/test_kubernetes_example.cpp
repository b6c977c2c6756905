// packaging/kubernetes/: the Deployment's pod probes and scrapes what its configuration
// serves. The YAML is read as plain text (no YAML library): the few keys checked are
// each on a line of their own.

#include <regex>

#include "tests/integration/harness.hpp"
#include "tests/integration/http_client.hpp"

using namespace pkit::itest;

namespace {

fs::path kubernetes_dir() {
    // PKIT_CONFIG_CORPUS is SOURCE/tests/corpus/config.
    return fs::path(PKIT_CONFIG_CORPUS).parent_path().parent_path().parent_path() / "packaging" /
           "kubernetes";
}

// Every capture of `pattern`'s first group in `text`.
std::vector<std::string> all(const std::string& text, const std::string& pattern) {
    std::vector<std::string> found;
    std::regex re(pattern);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
         ++it) {
        found.push_back((*it)[1].str());
    }
    return found;
}

// The block of lines after `key:` indented deeper than it.
std::string block(const std::string& text, const std::string& key) {
    std::size_t at = text.find(key + ":");
    REQUIRE_MESSAGE(at != std::string::npos, key << " not in deployment.yaml");
    std::size_t line_start = text.rfind('\n', at) + 1;
    std::size_t indent = at - line_start;
    std::string out;
    std::size_t pos = text.find('\n', at) + 1;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        std::string line = text.substr(pos, end - pos);
        std::size_t first = line.find_first_not_of(' ');
        if (first != std::string::npos && first <= indent) {
            break;
        }
        out += line + "\n";
        pos = end == std::string::npos ? text.size() : end + 1;
    }
    return out;
}

}  // namespace

TEST_CASE(
    "kubernetes example: the pod's probes, port and scrape annotations match what its pkitd.toml "
    "serves") {
    const fs::path dir = kubernetes_dir();
    const std::string pod = read_file(dir / "deployment.yaml");
    const std::string toml = read_file(dir / "pkit" / "pkitd.toml");
    REQUIRE(!pod.empty());
    REQUIRE(!toml.empty());

    auto listen = all(toml, "\\nlisten = \"[^\"]*:([0-9]+)\"");
    REQUIRE(listen.size() == 1);
    const std::string port = listen[0];

    const std::string liveness = block(pod, "livenessProbe");
    const std::string readiness = block(pod, "readinessProbe");
    CHECK(all(liveness, "path: (\\S+)") == std::vector<std::string>{"/healthz"});
    CHECK(all(liveness, "port: (\\S+)") == std::vector<std::string>{port});
    CHECK(all(readiness, "path: (\\S+)") == std::vector<std::string>{"/readyz"});
    CHECK(all(readiness, "port: (\\S+)") == std::vector<std::string>{port});
    CHECK(all(pod, "containerPort: (\\S+)") == std::vector<std::string>{port});
    CHECK(all(pod, "prometheus.io/port: \"([0-9]+)\"") == std::vector<std::string>{port});
    CHECK(all(pod, "prometheus.io/path: \"(\\S+)\"") == std::vector<std::string>{"/metrics"});
    CHECK(all(pod, "prometheus.io/scrape: \"(\\S+)\"") == std::vector<std::string>{"true"});

    auto grace = all(pod, "terminationGracePeriodSeconds: ([0-9]+)");
    auto shutdown = all(toml, "\\nshutdown_timeout = \"([0-9]+)s\"");
    REQUIRE(grace.size() == 1);
    REQUIRE(shutdown.size() == 1);
    CHECK(std::stoi(grace[0]) > std::stoi(shutdown[0]));

    // Every file the ConfigMap mounts exists, and the tree is valid.
    for (const std::string& file : all(block(pod, "items"), "path: (\\S+)")) {
        CHECK_MESSAGE(fs::exists(dir / "pkit" / file), file);
    }
    CommandResult check = run_pkitd({"--config", (dir / "pkit").string(), "--check"});
    CHECK_MESSAGE(check.exit_code == 0, check.all());
}

TEST_CASE("kubernetes example: pkitd on the example tree answers the probes' paths") {
    const fs::path source = kubernetes_dir() / "pkit";
    TempDir dir;
    const int port = unused_port();
    std::string toml = read_file(source / "pkitd.toml");
    toml = std::regex_replace(toml, std::regex("0\\.0\\.0\\.0:[0-9]+"),
                              "127.0.0.1:" + std::to_string(port));
    dir.daemon_config(toml);
    for (const auto& entry : fs::directory_iterator(source / "services")) {
        write_file(dir.path() / "services" / entry.path().filename(), read_file(entry.path()));
    }
    Daemon pkitd(dir);
    pkitd.wait_ready();
    CHECK(http_get(port, "/healthz").status == 200);
    wait_for([&] { return http_get(port, "/readyz").status == 200; }, 10s, "/readyz 200");
    CHECK(http_get(port, "/metrics").body.find("pkit_service_state{service=\"web\"") !=
          std::string::npos);
    CHECK(pkitd.stop() == 0);
}
