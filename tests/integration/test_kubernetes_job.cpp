// packaging/kubernetes/job/: the Job's tree is valid and makes pkitd a job container,
// the manifest mounts every file of it, and pkitd on that tree (with stand-in
// commands) exits 0 when the jobs end done and 1 when one fails.

#include <regex>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

fs::path job_dir() {
    // PKIT_CONFIG_CORPUS is SOURCE/tests/corpus/config.
    return fs::path(PKIT_CONFIG_CORPUS).parent_path().parent_path().parent_path() / "packaging" /
           "kubernetes" / "job";
}

// The example tree in `dir`, each command replaced by `sh -c SCRIPT` of its service.
void copy_tree(const TempDir& dir, const std::string& migrate, const std::string& seed) {
    const fs::path source = job_dir() / "pkit";
    dir.daemon_config(read_file(source / "pkitd.toml"));
    for (auto [name, script] : {std::pair{"migrate", migrate}, std::pair{"seed", seed}}) {
        std::string toml = read_file(source / "services" / (std::string(name) + ".toml"));
        toml = std::regex_replace(toml, std::regex("command = \\[[^\\n]*\\]"),
                                  "command = [\"/bin/sh\", \"-c\", \"" + script + "\"]");
        dir.service(name, toml);
    }
}

}  // namespace

TEST_CASE("kubernetes job example: a valid job-container tree, every file mounted") {
    const fs::path dir = job_dir();
    const std::string job = read_file(dir / "job.yaml");
    REQUIRE(!job.empty());
    CHECK(job.find("kind: Job") != std::string::npos);
    CHECK(job.find("restartPolicy: Never") != std::string::npos);
    CHECK(read_file(dir / "pkit" / "pkitd.toml").find("exit_when = \"all_done\"") !=
          std::string::npos);
    std::regex path_re("path: (\\S+)");
    int mounted = 0;
    for (auto it = std::sregex_iterator(job.begin(), job.end(), path_re);
         it != std::sregex_iterator(); ++it) {
        CHECK_MESSAGE(fs::exists(dir / "pkit" / (*it)[1].str()), (*it)[1].str());
        ++mounted;
    }
    CHECK(mounted == 3);
    CommandResult check = run_pkitd({"--config", (dir / "pkit").string(), "--check"});
    CHECK_MESSAGE(check.exit_code == 0, check.all());
}

TEST_CASE("kubernetes job example: pkitd exits 0 when the jobs are done, 1 when one fails") {
    for (int seed_exit : {0, 1}) {
        CAPTURE(seed_exit);
        TempDir dir;
        copy_tree(dir, "exit 0", "exit " + std::to_string(seed_exit));
        Daemon pkitd(dir);
        auto code = pkitd.wait_exit(15s);
        REQUIRE_MESSAGE(code.has_value(), "pkitd still runs; its log:\n" << pkitd.log());
        CHECK(*code == seed_exit);
    }
}
