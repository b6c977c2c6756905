#include "config/program_lookup.hpp"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <system_error>

#include "config/load_steps.hpp"
#include "config/suggest.hpp"
#include "config/variables.hpp"

namespace pkit::config::detail {
namespace {

namespace fs = std::filesystem;

// The variables a run's environment would hold, from what --check can know: pkitd's
// own environment (unless clear_env), then pkitd.toml's `env`, then the service's, each
// table's values expanded against the environment before it, as the launch applies
// them; and PKIT_SERVICE, PKIT_INSTANCE. No env_file: the caller looks at none.
class RunEnvironment {
public:
    RunEnvironment(const ServiceSpec& spec, const DaemonSpec& daemon) : m_spec(spec) {
        add_layer(daemon.env, "pkitd.toml's env");
        add_layer(spec.process->env, "the service's env");
    }

    // The value of NAME, or nullopt when no source defines it or only a run knows it.
    std::optional<std::string> value(std::string_view name) const {
        return value_below(name, m_layers.size());
    }

    // `text` expanded; nullopt when it holds a variable value() does not know.
    std::optional<std::string> expand(std::string_view text) const {
        return expand_below(text, m_layers.size());
    }

    // Where NAME's value comes from, for the messages: "the service's env", ...
    std::string source_of(std::string_view name) const {
        for (std::size_t i = m_layers.size(); i > 0; --i) {
            if (m_layers[i - 1].values.contains(std::string(name))) {
                return m_layers[i - 1].source;
            }
        }
        return "pkitd's environment";
    }

    // Whether a table defines NAME with a value --check cannot expand.
    bool unknown(std::string_view name) const {
        return std::ranges::any_of(m_layers, [&](const Layer& layer) {
            return layer.unknown.contains(std::string(name));
        });
    }

private:
    struct Layer {
        std::map<std::string, std::string> values;
        std::map<std::string, bool> unknown;
        std::string source;
    };

    std::optional<std::string> value_below(std::string_view name, std::size_t layers) const {
        const std::string key(name);
        if (key == "PKIT_SERVICE") {  // set last, over every source
            return m_spec.name;
        }
        if (key == "PKIT_INSTANCE") {
            return std::to_string(m_spec.instance == 0 ? 1 : m_spec.instance);
        }
        for (std::size_t i = layers; i > 0; --i) {
            if (auto it = m_layers[i - 1].values.find(key); it != m_layers[i - 1].values.end()) {
                return it->second;
            }
            if (m_layers[i - 1].unknown.contains(key)) {
                return std::nullopt;
            }
        }
        const bool account = key == "HOME" || key == "USER" || key == "LOGNAME" || key == "SHELL";
        if (key == "PKIT_RUN" || (account && m_spec.process->user.set())) {
            return std::nullopt;  // the run's, or the account's: known at launch
        }
        const char* inherited = m_spec.process->clear_env ? nullptr : std::getenv(key.c_str());
        return inherited != nullptr ? std::optional<std::string>(inherited) : std::nullopt;
    }

    std::optional<std::string> expand_below(std::string_view text, std::size_t layers) const {
        std::deque<std::string> held;  // the values the views point into
        auto lookup = [&](std::string_view name) -> std::optional<std::string_view> {
            auto found = value_below(name, layers);
            if (!found) {
                return std::nullopt;
            }
            held.push_back(std::move(*found));
            return std::string_view(held.back());
        };
        auto result = expand_variables(text, lookup);
        return result ? std::optional<std::string>(std::move(*result)) : std::nullopt;
    }

    void add_layer(const std::map<std::string, std::string>& table, std::string source) {
        Layer layer{.source = std::move(source)};
        for (const auto& [key, value] : table) {
            if (auto text = expand_below(value, m_layers.size())) {
                layer.values.emplace(key, std::move(*text));
            } else {
                layer.unknown.emplace(key, true);
            }
        }
        m_layers.push_back(std::move(layer));
    }

    const ServiceSpec& m_spec;
    std::vector<Layer> m_layers;
};

enum class Found { program, missing, directory, not_executable };

Found look_at(const fs::path& path) {
    std::error_code error;
    const fs::file_status status = fs::status(path, error);
    if (error || !fs::exists(status)) {
        return Found::missing;
    }
    if (fs::is_directory(status)) {
        return Found::directory;
    }
    constexpr fs::perms k_exec =
        fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec;
    if (!fs::is_regular_file(status) || (status.permissions() & k_exec) == fs::perms::none) {
        return Found::not_executable;
    }
    return Found::program;
}

// `path` as the run would open it: relative to its `cwd` when it has one, else to
// pkitd's working directory (this process's).
fs::path from(const std::optional<std::string>& cwd, std::string_view path) {
    fs::path p(path);
    return p.is_absolute() || !cwd ? p : fs::path(*cwd) / p;
}

// The names of the entries of `dir`, appended to `out` (for a suggestion).
void add_names_in(const fs::path& dir, std::vector<std::string>& out) {
    std::error_code error;
    for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
        out.push_back(it->path().filename().string());
    }
}

}  // namespace

void warn_missing_program(const ServiceDraft& service, const DaemonSpec& daemon,
                          std::vector<Diagnostic>& out) {
    const ServiceSpec& spec = service.spec;
    if (spec.command.empty() || spec.instance > 1) {
        return;
    }
    const ProcessSpec& process = *spec.process;
    const std::string& written = spec.command.front();
    const bool env_files = !process.env_files.empty() || !daemon.env_files.empty();
    if (env_files && !(written.starts_with('/') && !has_variables(written))) {
        return;  // an env_file may set PATH or the variables: read at each launch only
    }
    const RunEnvironment env(spec, daemon);
    const std::optional<std::string> program = env.expand(written);
    std::optional<std::string> cwd;
    if (process.cwd) {
        cwd = env.expand(*process.cwd);
    }
    if (!program || program->empty() || (process.cwd && !cwd)) {
        return;
    }
    auto warn = [&](const std::string& what) {
        out.push_back(Diagnostic{spec.file, service.command_pos.line, service.command_pos.column,
                                 "command: " + what, true});
    };
    const std::string shown =
        quote(written) + (*program != written ? " (" + quote(*program) + ")" : "");
    const std::string denied = "; a run would fail with permission_denied";
    if (program->find('/') != std::string::npos) {
        const fs::path path = from(cwd, *program);
        switch (look_at(path)) {
            case Found::program:
                return;
            case Found::directory:
                warn(shown + " is a directory" + denied);
                return;
            case Found::not_executable:
                warn(shown + " is not an executable file" + denied);
                return;
            case Found::missing:
                break;
        }
        std::vector<std::string> nearby;
        add_names_in(path.parent_path(), nearby);
        std::string near;
        if (auto name = closest(path.filename().string(), nearby)) {
            near = "; did you mean " + quote((fs::path(*program).parent_path() / *name).string()) +
                   "?";
        }
        warn(shown + " does not exist" + near + "; a run would fail with not_found");
        return;
    }
    if (env.unknown("PATH")) {
        return;
    }
    const std::optional<std::string> from_env = env.value("PATH");
    const std::string list = from_env.value_or(std::string(k_default_path));
    std::vector<std::string> nearby;
    bool not_executable = false;
    std::string_view rest = list;
    for (;;) {
        const std::size_t colon = rest.find(':');
        const std::string_view dir = rest.substr(0, colon);
        const fs::path base = from(cwd, dir.empty() ? std::string_view(".") : dir);
        switch (look_at(base / *program)) {
            case Found::program:
                return;
            case Found::not_executable:
                not_executable = true;
                break;
            case Found::directory:
            case Found::missing:
                break;
        }
        add_names_in(base, nearby);
        if (colon == std::string_view::npos) {
            break;
        }
        rest.remove_prefix(colon + 1);
    }
    const std::string where =
        "PATH " + quote(list) + " (" + (from_env ? env.source_of("PATH") : "the default") + ")";
    if (not_executable) {
        warn(shown + " is in " + where + " only as a file that is not executable" + denied);
        return;
    }
    warn(shown + " is not found in " + where + did_you_mean(*program, nearby) +
         "; a run would fail with not_found");
}

}  // namespace pkit::config::detail
