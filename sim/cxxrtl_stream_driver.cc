// Stream driver for a CXXRTL model of a core with one input stream `i` and one output stream `o`.
//
// Compiled in one translation unit after the generated design (see `build_cxxrtl` in
// compiled.py), which defines CXXRTL_TOP and the port macros below:
//
//   DUT_CLK, DUT_RST (optional), DUT_I_VALID, DUT_I_READY, DUT_I_PAYLOAD,
//   DUT_O_VALID, DUT_O_READY, DUT_O_PAYLOAD     member names of the design class
//   DUT_I_WIDTH                                  width of the input payload in bits (<= 64)
//   DUT_PREV_CLK (optional)                      CXXRTL's member holding the clock's previous
//                                                value: enables one `eval` per cycle instead of
//                                                two `step`s (only for designs whose `eval`
//                                                always converges in one pass)
//   DUT_FAST_COMMIT(top) (optional, with DUT_PREV_CLK)  copies every flip-flop's next state to
//                                                its current state without comparing (no
//                                                data-dependent branches; what `commit` does
//                                                minus change detection)
//
// Usage: driver IN_FILE OUT_FILE [option VALUE]...   ("-" is stdin / stdout)
//
//   in-bytes N       bytes per input item in IN_FILE (1, 2, 4 or 8; little-endian)
//   out-bytes N      bytes per output item written to OUT_FILE (1, 2, 4 or 8; little-endian)
//   in-last-bit B    bit of the input payload that is `last` (used to count messages)
//   auto-last 0|1    set `in-last-bit` on the final input item (IN_FILE then holds bare items)
//   out-last-bit B   bit of the output payload that is `last`
//   gaps P           probability (0..65535 of 65536) that the source idles in a cycle
//   stalls P         probability (0..65535 of 65536) that the sink is not ready in a cycle
//   seed S           seed of the pseudo-random gaps and stalls
//   max-idle N       give up after N cycles without any transfer (default 100000)
//   drain N          cycles simulated after the final `last` output to catch stray outputs (16)
//   progress N       print "progress I" (I = inputs transferred so far) every N input transfers
//                    (0: never; the default), to where the statistics go
//
// Output items are written as they are accepted. A line of statistics goes to stdout (to stderr
// when OUT_FILE is stdout):
//   cycles=C total_cycles=T inputs=I outputs=O messages=M cpu_ns=P elapsed_ns=E
// where C counts clock cycles from the first input transfer to the last output transfer with
// `last` set, both included; P and E are the processor and wall time of the simulation loop.
// Exit status: 0 done, 2 bad usage or I/O error, 3 stuck (no transfer for max-idle cycles),
// 4 the single-pass loop met a design that needs delta cycles (a bug of the build).

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

[[noreturn]] void fail(int code, const char *message, const char *detail = "") {
	std::fprintf(stderr, "cxxrtl driver: %s%s\n", message, detail);
	std::exit(code);
}

uint64_t parse_uint(const char *text) {
	char *end = nullptr;
	unsigned long long value = std::strtoull(text, &end, 0);
	if (end == text || *end != '\0')
		fail(2, "not an unsigned integer: ", text);
	return value;
}

std::vector<uint8_t> read_all(const char *path) {
	FILE *file = std::strcmp(path, "-") == 0 ? stdin : std::fopen(path, "rb");
	if (!file)
		fail(2, "cannot open input file ", path);
	std::vector<uint8_t> data;
	uint8_t buffer[1 << 16];
	size_t count;
	while ((count = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
		data.insert(data.end(), buffer, buffer + count);
	if (std::ferror(file))
		fail(2, "cannot read input file ", path);
	if (file != stdin)
		std::fclose(file);
	return data;
}

struct Rng {
	uint64_t state;
	explicit Rng(uint64_t seed) : state(seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull) {
		if (state == 0) state = 1;
	}
	uint32_t next16() {
		state ^= state >> 12;
		state ^= state << 25;
		state ^= state >> 27;
		return (uint32_t)((state * 0x2545f4914f6cdd1dull) >> 48);
	}
};

} // namespace

int main(int argc, char **argv) {
	if (argc < 3 || (argc - 3) % 2 != 0)
		fail(2, "usage: driver IN_FILE OUT_FILE [option VALUE]...");
	const char *in_path = argv[1], *out_path = argv[2];
	uint64_t in_bytes = 1, out_bytes = 4, in_last_bit = 0, out_last_bit = 0, auto_last = 0;
	uint64_t gaps = 0, stalls = 0, seed = 1, max_idle = 100000, drain = 16, progress = 0;
	for (int index = 3; index < argc; index += 2) {
		std::string key = argv[index];
		uint64_t value = parse_uint(argv[index + 1]);
		if (key == "in-bytes") in_bytes = value;
		else if (key == "out-bytes") out_bytes = value;
		else if (key == "in-last-bit") in_last_bit = value;
		else if (key == "out-last-bit") out_last_bit = value;
		else if (key == "auto-last") auto_last = value;
		else if (key == "gaps") gaps = value;
		else if (key == "stalls") stalls = value;
		else if (key == "seed") seed = value;
		else if (key == "max-idle") max_idle = value;
		else if (key == "drain") drain = value;
		else if (key == "progress") progress = value;
		else fail(2, "unknown option ", argv[index]);
	}
	if ((in_bytes != 1 && in_bytes != 2 && in_bytes != 4 && in_bytes != 8) ||
	    (out_bytes != 1 && out_bytes != 2 && out_bytes != 4 && out_bytes != 8))
		fail(2, "item sizes must be 1, 2, 4 or 8 bytes");
	if (in_last_bit > 63 || out_last_bit > 63 || gaps > 65535 || stalls > 65535)
		fail(2, "option out of range");

	std::vector<uint8_t> input = read_all(in_path);
	if (input.size() % in_bytes != 0)
		fail(2, "input file size is not a multiple of the item size");
	const size_t n_items = input.size() / in_bytes;
	auto item_at = [&](size_t index) -> uint64_t {
		const uint8_t *bytes = &input[index * in_bytes];
		uint64_t value;  // little-endian hosts only
		switch (in_bytes) {
			case 1: value = bytes[0]; break;
			case 2: { uint16_t item; std::memcpy(&item, bytes, 2); value = item; break; }
			case 4: { uint32_t item; std::memcpy(&item, bytes, 4); value = item; break; }
			default: std::memcpy(&value, bytes, 8); break;
		}
		if (auto_last && index + 1 == n_items)
			value |= uint64_t(1) << in_last_bit;
		return DUT_I_WIDTH >= 64 ? value : value & ((uint64_t(1) << (DUT_I_WIDTH % 64)) - 1);
	};
	uint64_t messages = 0;
	for (size_t index = 0; index < n_items; index++)
		messages += (item_at(index) >> in_last_bit) & 1;

	FILE *out_file = std::strcmp(out_path, "-") == 0 ? stdout : std::fopen(out_path, "wb");
	if (!out_file)
		fail(2, "cannot open output file ", out_path);
	FILE *info = out_file == stdout ? stderr : stdout;  // progress and statistics
	std::vector<uint8_t> out_buffer;
	out_buffer.reserve(1 << 20);
	auto flush = [&]() {
		if (!out_buffer.empty() &&
		    std::fwrite(out_buffer.data(), 1, out_buffer.size(), out_file) != out_buffer.size())
			fail(2, "cannot write output file ", out_path);
		out_buffer.clear();
	};

	CXXRTL_TOP top;
	Rng rng(seed);
	const auto started = std::chrono::steady_clock::now();
	const std::clock_t cpu_started = std::clock();

#ifdef DUT_RST
	top.DUT_RST.template set<bool>(true);
	top.DUT_CLK.template set<bool>(false); top.step();
	top.DUT_CLK.template set<bool>(true);  top.step();
	top.DUT_RST.template set<bool>(false);
#endif

	size_t next_item = 0;          // index of the item offered (or to be offered) on `i`
	uint64_t item = 0;             // its payload
	bool in_valid = false;
	uint64_t cycle = 0, first_in = 0, last_out = 0, idle = 0;
	uint64_t n_outputs = 0, lasts_seen = 0, draining = 0;
	bool started_in = false, finished = n_items == 0;
	while (true) {
		// Drive the inputs for this cycle. `valid` and the payload hold until the transfer.
		if (!in_valid && next_item < n_items) {
			in_valid = gaps == 0 || rng.next16() >= gaps;
			if (in_valid)
				item = item_at(next_item);
		}
		bool out_ready = stalls == 0 || rng.next16() >= stalls;
		top.DUT_I_VALID.template set<bool>(in_valid);
		if (in_valid)
			top.DUT_I_PAYLOAD.template set<uint64_t>(item);
		top.DUT_O_READY.template set<bool>(out_ready);
#ifdef DUT_PREV_CLK
		// One evaluation per cycle: with the clock high and its previous value forced low, `eval`
		// computes the combinational outputs from the current state and inputs (sampled below)
		// and the flip-flops' next state (taken over by `commit` at the end of the cycle). Valid
		// only for a design whose evaluation always converges in one pass (checked).
		top.DUT_PREV_CLK.template set<bool>(false);
		top.DUT_CLK.template set<bool>(true);
		if (!top.eval())
			fail(4, "the design needs delta cycles; build it without DUT_PREV_CLK");
#else
		top.DUT_CLK.template set<bool>(false);
		top.step();
#endif

		// Sample the handshakes before the rising edge.
		bool in_transfer = in_valid && top.DUT_I_READY.template get<bool>();
		bool out_transfer = out_ready && top.DUT_O_VALID.template get<bool>();
		if (in_transfer) {
			if (!started_in) {
				started_in = true;
				first_in = cycle;
			}
			next_item++;
			in_valid = false;
			if (progress && next_item % progress == 0) {
				std::fprintf(info, "progress %llu\n", (unsigned long long)next_item);
				std::fflush(info);
			}
		}
		if (out_transfer) {
			uint64_t value = top.DUT_O_PAYLOAD.template get<uint64_t>();
			uint8_t bytes[8];
			std::memcpy(bytes, &value, 8); // little-endian hosts only
			out_buffer.insert(out_buffer.end(), bytes, bytes + out_bytes);
			if (out_buffer.size() >= (1 << 20))
				flush();
			n_outputs++;
			if (!finished && ((value >> out_last_bit) & 1)) {
				lasts_seen++;
				last_out = cycle;
				if (lasts_seen >= messages && next_item == n_items)
					finished = true;
			}
		}
		idle = (in_transfer || out_transfer) ? 0 : idle + 1;

#if defined(DUT_PREV_CLK) && defined(DUT_FAST_COMMIT)
		DUT_FAST_COMMIT(top);
#elif defined(DUT_PREV_CLK)
		top.commit();
#else
		top.DUT_CLK.template set<bool>(true);
		top.step();
#endif
		cycle++;

		if (finished) {
			if (draining++ >= drain)
				break;
		} else if (idle > max_idle) {
			flush();
			if (out_file != stdout)
				std::fclose(out_file);
			std::fprintf(stderr, "cxxrtl driver: no transfer for %llu cycles after %llu of %llu "
			             "inputs and %llu outputs\n", (unsigned long long)max_idle,
			             (unsigned long long)next_item, (unsigned long long)n_items,
			             (unsigned long long)n_outputs);
			return 3;
		}
	}
	flush();
	if (out_file != stdout && std::fclose(out_file) != 0)
		fail(2, "cannot write output file ", out_path);

	const auto elapsed = std::chrono::steady_clock::now() - started;
	const double cpu_ns = double(std::clock() - cpu_started) * 1e9 / CLOCKS_PER_SEC;
	std::fprintf(info, "cycles=%llu total_cycles=%llu inputs=%llu outputs=%llu messages=%llu "
	             "cpu_ns=%llu elapsed_ns=%llu\n",
	            (unsigned long long)(n_items ? last_out - first_in + 1 : 0),
	            (unsigned long long)cycle, (unsigned long long)next_item,
	            (unsigned long long)n_outputs, (unsigned long long)messages,
	            (unsigned long long)cpu_ns,
	            (unsigned long long)
	                std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
	return 0;
}
