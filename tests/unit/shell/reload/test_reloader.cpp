// The Reloader (reload/reloader.hpp) against a fake ReloadHost: the tree read off the
// loop and applied in one go; reloads asked for during a read coalesced into one more;
// an invalid tree, one the host's checks refuse (cgroups, [[listen]] sockets) changing
// nothing; systemd's RELOADING/READY around every read; nothing read while shutting
// down; `scale`'s counts laid over later reloads until the file's own count changes; and
// `reload --dry-run` applying nothing.

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/loader.hpp"
#include "daemon/shell/reload/reloader.hpp"
#include "tests/unit/core/fake.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

// A configuration directory: services/NAME.toml written by the test.
struct ConfigDir {
    TempDir dir;
    ConfigDir() { std::filesystem::create_directories(dir.path() + "/services"); }
    void service(const std::string& name, const std::string& toml) {
        dir.write("services/" + name + ".toml", toml);
    }
    config::Tree load() const {
        auto tree = config::load_tree(dir.path(), config::default_load_options());
        REQUIRE(tree);
        return std::move(*tree);
    }
};

// The daemon above the Reloader: a real Supervisor the applied trees go to, and a
// record of every call.
class FakeReloadHost final : public ReloadHost {
public:
    explicit FakeReloadHost(config::Tree tree) : m_sup(std::move(tree), [] { return 0.5; }) {}

    const core::Supervisor& supervisor() const override { return m_sup; }
    void log(std::string_view level, const std::string& message) override {
        logged.push_back(std::string(level) + ": " + message);
    }
    void log_load_warnings(const std::vector<config::Diagnostic>& warnings) override {
        for (const config::Diagnostic& w : warnings) {
            logged.push_back(w.to_string());
        }
    }
    std::vector<config::Diagnostic> tree_errors(const config::Tree&) const override {
        return cgroup_errors;
    }
    std::expected<ListenSockets::Staged, std::vector<config::Diagnostic>> stage_sockets(
        const config::Tree&) override {
        ++staged;
        if (!socket_errors.empty()) {
            return std::unexpected(socket_errors);
        }
        return ListenSockets::Staged{};
    }
    core::ReloadOutcome apply_tree(config::Tree tree,
                                   std::optional<ListenSockets::Staged> sockets) override {
        std::vector<std::string> names;
        for (const config::ServiceSpec& spec : tree.services) {
            names.push_back(spec.name);
        }
        applied.push_back(names);
        applied_with_sockets.push_back(sockets.has_value());
        core::ReloadOutcome outcome = m_sup.reload_from(tree, core::test::at(1), {});
        m_sup.take_actions();
        return outcome;
    }
    void reloading(bool started) override { systemd.push_back(started ? "RELOADING" : "READY"); }

    core::Supervisor& sup() { return m_sup; }

    std::vector<std::string> logged;
    std::vector<config::Diagnostic> cgroup_errors;
    std::vector<config::Diagnostic> socket_errors;
    int staged = 0;
    std::vector<std::vector<std::string>> applied;  // each tree's services, by name
    std::vector<bool> applied_with_sockets;
    std::vector<std::string> systemd;

private:
    core::Supervisor m_sup;
};

using Names = std::vector<std::string>;
using ReloadAnswers = std::vector<Reloader::ReloadResult>;

Reloader make_reloader(TestLoop& loop, FakeReloadHost& host, const ConfigDir& config) {
    return Reloader(loop.get(), host, config.dir.path(), nullptr, "/run/pkit.sock", false);
}

bool has_line(const std::vector<std::string>& lines, const std::string& part) {
    return std::ranges::any_of(lines, [&](const std::string& l) { return l.find(part) != l.npos; });
}

}  // namespace

TEST_CASE("a reload reads the files off the loop and applies the valid tree in one go") {
    ConfigDir config;
    config.service("web", "command = [\"/bin/true\"]\n");
    TestLoop loop;
    ReloadAnswers answers;
    {
        FakeReloadHost host(config.load());
        Reloader reloader = make_reloader(loop, host, config);
        config.service("api", "command = [\"/bin/true\"]\n");
        reloader.reload([&](const Reloader::ReloadResult& r) { answers.push_back(r); });
        CHECK(reloader.busy());
        CHECK(host.systemd == Names{"RELOADING"});
        CHECK(host.applied.empty());  // read on the worker: nothing yet
        REQUIRE(loop.run_until([&] { return !answers.empty(); }, 10s));
        CHECK_FALSE(reloader.busy());
        CHECK(host.applied == std::vector<Names>{{"api", "web"}});
        CHECK(host.applied_with_sockets == std::vector<bool>{true});
        CHECK(host.systemd == Names{"RELOADING", "READY"});
        REQUIRE(answers.size() == 1);
        REQUIRE(answers[0]);
        CHECK(answers[0]->outcome.added == Names{"api"});
        CHECK(host.sup().find("api").has_value());
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("reloads asked for during a read share one more read, after the first is applied") {
    ConfigDir config;
    config.service("web", "command = [\"/bin/true\"]\n");
    TestLoop loop;
    std::vector<std::pair<int, std::size_t>> answers;  // (request, trees applied by then)
    {
        FakeReloadHost host(config.load());
        Reloader reloader = make_reloader(loop, host, config);
        for (int request = 1; request <= 3; ++request) {
            reloader.reload([&, request](const Reloader::ReloadResult& r) {
                CHECK(r.has_value());
                answers.emplace_back(request, host.applied.size());
            });
        }
        CHECK(host.systemd == Names{"RELOADING"});  // one read at a time
        REQUIRE(loop.run_until([&] { return answers.size() == 3; }, 10s));
        // Two reads, not three, and not the first read's answer for the later two: their
        // files may have changed after it started.
        CHECK(host.applied.size() == 2);
        CHECK(answers == std::vector<std::pair<int, std::size_t>>{{1, 1}, {2, 2}, {3, 2}});
        CHECK(host.systemd == Names{"RELOADING", "READY", "RELOADING", "READY"});
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("an invalid tree, or one the host refuses, changes nothing and says where") {
    ConfigDir config;
    config.service("web", "command = [\"/bin/true\"]\n");
    TestLoop loop;
    ReloadAnswers answers;
    {
        FakeReloadHost host(config.load());
        Reloader reloader = make_reloader(loop, host, config);
        auto reload_once = [&] {
            answers.clear();
            reloader.reload([&](const Reloader::ReloadResult& r) { answers.push_back(r); });
            REQUIRE(loop.run_until([&] { return !answers.empty(); }, 10s));
            REQUIRE(answers.size() == 1);
            REQUIRE_FALSE(answers[0]);
            return answers[0].error();
        };

        config.service("web", "command = [\"/bin/true\"]\nno_such_key = 1\n");
        std::string error = reload_once();
        CHECK(error.find("web.toml:2:1: error: ") != std::string::npos);
        CHECK(has_line(host.logged, "error: reload: invalid configuration, nothing changed"));
        CHECK(host.staged == 0);

        config.service("web", "command = [\"/bin/true\"]\n");
        host.cgroup_errors = {{"services/web.toml", 3, 3, "resources.memory_max: no memory"}};
        CHECK(reload_once() == "services/web.toml:3:3: error: resources.memory_max: no memory");
        CHECK(host.staged == 0);  // checked before any socket is bound

        host.cgroup_errors.clear();
        host.socket_errors = {{"services/web.toml", 4, 1, "listen: address in use"}};
        CHECK(reload_once() == "services/web.toml:4:1: error: listen: address in use");
        CHECK(host.staged == 1);

        CHECK(host.applied.empty());
        // systemd heard READY after each, whatever the outcome.
        CHECK(host.systemd ==
              Names{"RELOADING", "READY", "RELOADING", "READY", "RELOADING", "READY"});
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("while pkitd shuts down a reload is answered at once and nothing is read") {
    ConfigDir config;
    config.service("web", "command = [\"/bin/true\"]\n");
    TestLoop loop;
    ReloadAnswers answers;
    std::vector<Reloader::PreviewResult> previews;
    {
        FakeReloadHost host(config.load());
        Reloader reloader = make_reloader(loop, host, config);
        host.sup().shutdown(core::test::at(1));
        reloader.reload([&](const Reloader::ReloadResult& r) { answers.push_back(r); });
        reloader.preview([&](const Reloader::PreviewResult& r) { previews.push_back(r); });
        REQUIRE(answers.size() == 1);
        CHECK(answers[0].error() == "pkitd is shutting down");
        REQUIRE(previews.size() == 1);
        CHECK(previews[0].error() == "pkitd is shutting down");
        CHECK(reloader.scale("web", 2) == "pkitd is shutting down");
        CHECK_FALSE(reloader.busy());
        CHECK(host.systemd.empty());
        CHECK(host.applied.empty());
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("scale's count is kept over later reloads until the file's own count changes") {
    ConfigDir config;
    config.service("web", "command = [\"/bin/true\"]\ninstances = 2\n");
    TestLoop loop;
    ReloadAnswers answers;
    {
        FakeReloadHost host(config.load());
        Reloader reloader = make_reloader(loop, host, config);
        auto reload_now = [&] {
            answers.clear();
            reloader.reload([&](const Reloader::ReloadResult& r) { answers.push_back(r); });
            REQUIRE(loop.run_until([&] { return !answers.empty(); }, 10s));
            REQUIRE(answers[0]);
        };
        CHECK(host.sup().find_all("web").size() == 2);

        CHECK_FALSE(reloader.scale("web", 3));
        REQUIRE(host.applied.size() == 1);
        CHECK(host.applied[0] == Names{"web@1", "web@2", "web@3"});
        CHECK(host.applied_with_sockets == std::vector<bool>{false});  // no new sockets
        CHECK(has_line(host.logged, "info: scale: web to 3 instances (1 added, 0 removed)"));
        REQUIRE(reloader.scaled_facts().size() == 1);
        CHECK(reloader.scaled_facts()[0].count == 3);

        reload_now();  // the file still says 2: the scaled 3 stand
        CHECK(host.applied.back() == Names{"web@1", "web@2", "web@3"});

        config.service("web", "command = [\"/bin/true\"]\ninstances = 4\n");
        reload_now();  // the file's own count changed: it decides
        CHECK(host.applied.back() == Names{"web@1", "web@2", "web@3", "web@4"});
        CHECK(reloader.scaled_facts().empty());

        // Back to the file's count: nothing is kept.
        CHECK_FALSE(reloader.scale("web", 4));
        CHECK(reloader.scaled_facts().empty());
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("reload --dry-run says what a reload would do and applies nothing") {
    ConfigDir config;
    config.service("web", "command = [\"/bin/true\"]\n");
    TestLoop loop;
    std::vector<Reloader::PreviewResult> previews;
    {
        FakeReloadHost host(config.load());
        Reloader reloader = make_reloader(loop, host, config);
        config.service("api", "command = [\"/bin/true\"]\n");
        reloader.preview([&](const Reloader::PreviewResult& r) { previews.push_back(r); });
        REQUIRE(loop.run_until([&] { return !previews.empty(); }, 10s));
        REQUIRE(previews[0]);
        CHECK(previews[0]->preview.added == Names{"api"});
        CHECK(previews[0]->preview.unchanged == 1);
        CHECK(host.applied.empty());
        CHECK(host.staged == 0);
        CHECK(host.systemd.empty());
        CHECK_FALSE(host.sup().find("api"));
    }
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
