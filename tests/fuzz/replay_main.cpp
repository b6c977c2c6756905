// A main() for the fuzz targets where libFuzzer is not linked (g++, or clang without
// -fsanitize=fuzzer): runs LLVMFuzzerTestOneInput once over every regular file in the
// directories (or files) given as arguments, and prints how many it ran; none at all
// is a failure (a mistyped corpus path must not pass). Built with
// AddressSanitizer and UBSan (-fno-sanitize-recover=all), so an input that once
// crashed a target aborts this program, and the ctest entry fuzz-replay-TARGET fails.
//
//   pkit_fuzz_replay_TARGET DIR_OR_FILE...
//
// A file whose first line is "#pkit-fuzz-generate" stands for a bigger input, made here
// before it is run (a million levels of nesting are megabytes; the repository keeps
// their recipe): each next line is "COUNT TEXT", TEXT written COUNT times, with \n,
// \t, \\ and \xHH for the bytes a line cannot hold. libFuzzer takes such a file as
// it is, as a seed like any other.

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

// Every regular file under `root` (or `root` itself) but README.md and hidden files,
// in name order so a run is reproducible. A missing directory is skipped: crashes/ may hold nothing
// yet.
std::vector<fs::path> inputs_under(const fs::path& root) {
    std::vector<fs::path> files;
    std::error_code ec;
    if (fs::is_regular_file(root, ec)) {
        files.push_back(root);
    } else if (fs::is_directory(root, ec)) {
        for (const auto& entry : fs::recursive_directory_iterator(root, ec)) {
            const std::string name = entry.path().filename().string();
            if (entry.is_regular_file(ec) && !name.starts_with('.') && name != "README.md") {
                files.push_back(entry.path());
            }
        }
    }
    std::ranges::sort(files);
    return files;
}

constexpr std::string_view k_generate = "#pkit-fuzz-generate";

// TEXT of a recipe line with its escapes replaced; nullopt when one is malformed.
std::optional<std::string> unescape(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\\') {
            out += text[i];
            continue;
        }
        if (++i == text.size()) {
            return std::nullopt;
        }
        switch (text[i]) {
            case 'n':
                out += '\n';
                break;
            case 't':
                out += '\t';
                break;
            case '\\':
                out += '\\';
                break;
            case 'x': {
                unsigned byte = 0;
                auto digits = text.substr(i + 1, 2);
                auto [end, ec] =
                    std::from_chars(digits.data(), digits.data() + digits.size(), byte, 16);
                if (ec != std::errc{} || end != digits.data() + 2) {
                    return std::nullopt;
                }
                out += static_cast<char>(byte);
                i += 2;
                break;
            }
            default:
                return std::nullopt;
        }
    }
    return out;
}

// The input a recipe stands for, or nullopt (with a message) when it is malformed.
std::optional<std::string> generate(std::string_view recipe, const fs::path& file) {
    std::string out;
    std::size_t line_number = 1;
    recipe.remove_prefix(std::min(recipe.size(), recipe.find('\n')));
    while (!recipe.empty()) {
        recipe.remove_prefix(1);  // the newline
        ++line_number;
        const std::string_view line = recipe.substr(0, recipe.find('\n'));
        recipe.remove_prefix(line.size());
        if (line.empty()) {
            continue;
        }
        std::size_t count = 0;
        const std::size_t space = std::min(line.find(' '), line.size());
        auto [end, ec] = std::from_chars(line.data(), line.data() + space, count);
        auto text = space == line.size() ? std::nullopt : unescape(line.substr(space + 1));
        if (ec != std::errc{} || end != line.data() + space || !text) {
            std::fprintf(stderr, "%s:%zu: not \"COUNT TEXT\"\n", file.c_str(), line_number);
            return std::nullopt;
        }
        out.reserve(out.size() + count * text->size());
        for (std::size_t i = 0; i < count; ++i) {
            out += *text;
        }
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    int ran = 0;
    for (int i = 1; i < argc; ++i) {
        for (const fs::path& file : inputs_under(argv[i])) {
            std::ifstream in(file, std::ios::binary);
            if (!in) {
                std::fprintf(stderr, "cannot read %s\n", file.c_str());
                return 1;
            }
            std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
            if (bytes.starts_with(k_generate)) {
                auto generated = generate(bytes, file);
                if (!generated) {
                    return 1;
                }
                bytes = std::move(*generated);
            }
            // A copy on the heap of exactly the input's size, as libFuzzer passes it,
            // so that reading past the end is caught by AddressSanitizer.
            std::vector<std::uint8_t> data(bytes.begin(), bytes.end());
            std::fprintf(stderr, "running %s (%zu bytes)\n", file.c_str(), data.size());
            LLVMFuzzerTestOneInput(data.data(), data.size());
            ++ran;
        }
    }
    std::printf("%d inputs run\n", ran);
    return ran > 0 ? 0 : 1;
}
