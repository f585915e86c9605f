// Stream driver for a compiled model of a core with one input stream `i` and one output stream
// `o`: a CXXRTL model, or a Verilator model with DUT_VERILATOR defined.
//
// CXXRTL: compiled in one translation unit after the generated design (see `build_cxxrtl` in
// compiled.py), which defines CXXRTL_TOP and the port macros below. Verilator (see
// `build_verilator` in compiled.py): compiled with the verilated model `Vtop` (DUT_VERILATOR
// defined); the port macros name the model's members, and the DUT_PREV_CLK options are unused.
//
//   DUT_CLK, DUT_RST (optional), DUT_I_VALID, DUT_I_READY, DUT_I_PAYLOAD,
//   DUT_O_VALID, DUT_O_READY, DUT_O_PAYLOAD     member names of the design class
//   DUT_I_WIDTH                                  width of the input payload in bits
//   DUT_PREV_CLK (optional)                      CXXRTL's member holding the clock's previous
//                                                value: enables one `eval` per cycle instead of
//                                                two `step`s (only for designs whose `eval`
//                                                always converges in one pass)
//   DUT_FAST_COMMIT(top) (optional, with DUT_PREV_CLK)  copies every flip-flop's next state to
//                                                its current state without comparing (no
//                                                data-dependent branches; what `commit` does
//                                                minus change detection)
//
// Payloads of any width: items travel as little-endian byte strings.
//
// Usage: driver IN_FILE OUT_FILE [option VALUE]...   ("-" is stdin / stdout)
//
//   in-bytes N       bytes per input item in IN_FILE (1..64; little-endian)
//   out-bytes N      bytes per output item written to OUT_FILE (1..64; little-endian)
//   in-last-bit B    bit of the input payload that is `last` (used to count messages)
//   auto-last 0|1    set `in-last-bit` on the final input beat (IN_FILE then holds bare items)
//   out-last-bit B   bit of the output payload that is `last`
//   in-lanes N       0 (default): each item is one input payload. N > 0: a beat of up to N
//                    items, item k in bits 8*in-bytes*k..; every beat but the final one full
//   in-count-bit C   (with in-lanes) the beat's item count goes to bits C.. of the payload
//   out-lanes N      0 (default): each output payload is one item. N > 0: the payload holds N
//                    lanes of out-lane-width bits (lane k at bit k*width) and `last` at
//                    out-last-bit; each lane whose bit out-lane-valid-bit is set is written as
//                    one item, that bit replaced by the beat's `last` on the beat's final valid
//                    lane (0 on the others)
//   out-lane-width W, out-lane-valid-bit V       (with out-lanes; W <= 56)
//   gaps P           probability (0..65535 of 65536) that the source idles in a cycle
//   stalls P         probability (0..65535 of 65536) that the sink is not ready in a cycle
//   seed S           seed of the pseudo-random gaps and stalls
//   max-idle N       give up after N cycles without any transfer (default 100000)
//   drain N          cycles simulated after the final `last` output to catch stray outputs (16)
//   progress N       print "progress I" (I = input items transferred so far) every N input
//                    items (0: never; the default), to where the statistics go
//
// The input is read as it is needed and the outputs are written as they come (the output buffer
// is flushed before every read that may block and whenever it holds 64 KiB), so the driver runs
// in constant memory and can sit between two pipes. The final beat is the one after which
// IN_FILE ends. A line of statistics goes to stdout (to stderr when OUT_FILE is stdout):
//   cycles=C total_cycles=T inputs=I beats=B outputs=O messages=M cpu_ns=P elapsed_ns=E
// where C counts clock cycles from the first input transfer to the last output transfer with
// `last` set, both included; P and E are the processor and wall time of the simulation loop.
// Exit status: 0 done, 2 bad usage or I/O error, 3 stuck (no transfer for max-idle cycles),
// 4 the single-pass loop met a design that needs delta cycles (a bug of the build).

#ifdef DUT_VERILATOR
#include "Vtop.h"
#include "verilated.h"
#endif

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

constexpr size_t MAX_BYTES = 64;      // of an item
constexpr size_t MAX_PAYLOAD = 256;   // bytes of a payload

[[noreturn]] void fail(int code, const char *message, const char *detail = "") {
	std::fprintf(stderr, "stream driver: %s%s\n", message, detail);
	std::exit(code);
}

uint64_t parse_uint(const char *text) {
	char *end = nullptr;
	unsigned long long value = std::strtoull(text, &end, 0);
	if (end == text || *end != '\0')
		fail(2, "not an unsigned integer: ", text);
	return value;
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

// Bit fields of little-endian byte strings (at most 57 bits at a time).
uint64_t get_bits(const uint8_t *bytes, size_t bit, size_t width) {
	uint64_t word = 0;
	std::memcpy(&word, bytes + bit / 8, 8);  // little-endian hosts only; buffers are padded
	return (word >> (bit % 8)) & (width >= 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1);
}

void or_bits(uint8_t *bytes, size_t bit, uint64_t value) {
	uint64_t word;
	std::memcpy(&word, bytes + bit / 8, 8);
	word |= value << (bit % 8);
	std::memcpy(bytes + bit / 8, &word, 8);
}

#ifdef DUT_VERILATOR

// A Verilator model: ports are integers (CData/SData/IData/QData) or VlWide<N> (N 32-bit words),
// and every evaluation settles the whole design; two evaluations per cycle (clock low with the
// new inputs: the outputs to sample; clock high: the edge).
template<class T>
void load(T &port, const uint8_t *bytes) {
	T value = 0;
	std::memcpy(&value, bytes, sizeof(T));  // little-endian hosts only; the beat is masked
	port = value;
}
template<std::size_t Words>
void load(VlWide<Words> &port, const uint8_t *bytes) {
	std::memcpy(port.data(), bytes, Words * 4);
}
template<class T>
void store(const T &port, uint8_t *bytes) { std::memcpy(bytes, &port, sizeof(T)); }
template<std::size_t Words>
void store(const VlWide<Words> &port, uint8_t *bytes) {
	std::memcpy(bytes, port.data(), Words * 4);
}

struct Dut {
	VerilatedContext context;
	Vtop top{&context};
	void reset() {
#ifdef DUT_RST
		top.DUT_RST = 1;
		top.DUT_CLK = 0; top.eval();
		top.DUT_CLK = 1; top.eval();
		top.DUT_RST = 0;
#endif
	}
	void load_input(const uint8_t *beat) { load(top.DUT_I_PAYLOAD, beat); }
	void store_output(uint8_t *bytes) { store(top.DUT_O_PAYLOAD, bytes); }
	// Drive the handshakes and compute the outputs of this cycle (before the rising edge).
	void settle(bool in_valid, bool out_ready) {
		top.DUT_I_VALID = in_valid;
		top.DUT_O_READY = out_ready;
		top.DUT_CLK = 0;
		top.eval();
	}
	bool in_ready() { return top.DUT_I_READY & 1; }
	bool out_valid() { return top.DUT_O_VALID & 1; }
	void edge() { top.DUT_CLK = 1; top.eval(); }
};

#else

// CXXRTL values from and to little-endian byte strings.
template<size_t Bits>
void load(cxxrtl::value<Bits> &value, const uint8_t *bytes) {
	using chunk_t = typename cxxrtl::value<Bits>::chunk::type;
	for (size_t index = 0; index < value.chunks; index++)
		std::memcpy(&value.data[index], bytes + index * sizeof(chunk_t), sizeof(chunk_t));
	value.data[value.chunks - 1] &= value.msb_mask;
}

template<size_t Bits>
void store(const cxxrtl::value<Bits> &value, uint8_t *bytes) {
	using chunk_t = typename cxxrtl::value<Bits>::chunk::type;
	for (size_t index = 0; index < value.chunks; index++)
		std::memcpy(bytes + index * sizeof(chunk_t), &value.data[index], sizeof(chunk_t));
}

// Ports that CXXRTL made wires: inputs are written to `next`, outputs read from `curr`.
template<size_t Bits>
void load(cxxrtl::wire<Bits> &wire, const uint8_t *bytes) { load(wire.next, bytes); }

template<size_t Bits>
void store(const cxxrtl::wire<Bits> &wire, uint8_t *bytes) { store(wire.curr, bytes); }

// A CXXRTL model.
struct Dut {
	CXXRTL_TOP top;
	void reset() {
#ifdef DUT_RST
		top.DUT_RST.template set<bool>(true);
		top.DUT_CLK.template set<bool>(false); top.step();
		top.DUT_CLK.template set<bool>(true);  top.step();
		top.DUT_RST.template set<bool>(false);
#endif
	}
	void load_input(const uint8_t *beat) { load(top.DUT_I_PAYLOAD, beat); }
	void store_output(uint8_t *bytes) { store(top.DUT_O_PAYLOAD, bytes); }
	// Drive the handshakes and compute the outputs of this cycle (before the rising edge).
	void settle(bool in_valid, bool out_ready) {
		top.DUT_I_VALID.template set<bool>(in_valid);
		top.DUT_O_READY.template set<bool>(out_ready);
#ifdef DUT_PREV_CLK
		// One evaluation per cycle: with the clock high and its previous value forced low, `eval`
		// computes the combinational outputs from the current state and inputs (sampled next)
		// and the flip-flops' next state (taken over by `edge`). Valid only for a design whose
		// evaluation always converges in one pass (checked).
		top.DUT_PREV_CLK.template set<bool>(false);
		top.DUT_CLK.template set<bool>(true);
		if (!top.eval())
			fail(4, "the design needs delta cycles; build it without DUT_PREV_CLK");
#else
		top.DUT_CLK.template set<bool>(false);
		top.step();
#endif
	}
	bool in_ready() { return top.DUT_I_READY.template get<bool>(); }
	bool out_valid() { return top.DUT_O_VALID.template get<bool>(); }
	void edge() {
#if defined(DUT_PREV_CLK) && defined(DUT_FAST_COMMIT)
		DUT_FAST_COMMIT(top);
#elif defined(DUT_PREV_CLK)
		top.commit();
#else
		top.DUT_CLK.template set<bool>(true);
		top.step();
#endif
	}
};

#endif

// The input file, read as needed.
struct Input {
	FILE *file;
	std::vector<uint8_t> buffer = std::vector<uint8_t>(1 << 16);
	size_t start = 0, end = 0;
	bool eof = false;

	// At least `count` bytes buffered, unless the file ends first; `before_block` runs before a
	// read. Returns the bytes buffered.
	template<class F>
	size_t want(size_t count, F before_block) {
		while (end - start < count && !eof) {
			if (start > 0) {
				std::memmove(buffer.data(), buffer.data() + start, end - start);
				end -= start;
				start = 0;
			}
			before_block();
			size_t got = std::fread(buffer.data() + end, 1, buffer.size() - end, file);
			if (got == 0) {
				if (std::ferror(file))
					fail(2, "cannot read the input file");
				eof = true;
			}
			end += got;
		}
		return end - start;
	}
};

} // namespace

int main(int argc, char **argv) {
	if (argc < 3 || (argc - 3) % 2 != 0)
		fail(2, "usage: driver IN_FILE OUT_FILE [option VALUE]...");
	const char *in_path = argv[1], *out_path = argv[2];
	uint64_t in_bytes = 1, out_bytes = 4, in_last_bit = 0, out_last_bit = 0, auto_last = 0;
	uint64_t gaps = 0, stalls = 0, seed = 1, max_idle = 100000, drain = 16, progress = 0;
	uint64_t in_lanes = 0, in_count_bit = 0, out_lanes = 0, lane_width = 0, lane_valid_bit = 0;
	for (int index = 3; index < argc; index += 2) {
		std::string key = argv[index];
		uint64_t value = parse_uint(argv[index + 1]);
		if (key == "in-bytes") in_bytes = value;
		else if (key == "out-bytes") out_bytes = value;
		else if (key == "in-last-bit") in_last_bit = value;
		else if (key == "out-last-bit") out_last_bit = value;
		else if (key == "auto-last") auto_last = value;
		else if (key == "in-lanes") in_lanes = value;
		else if (key == "in-count-bit") in_count_bit = value;
		else if (key == "out-lanes") out_lanes = value;
		else if (key == "out-lane-width") lane_width = value;
		else if (key == "out-lane-valid-bit") lane_valid_bit = value;
		else if (key == "gaps") gaps = value;
		else if (key == "stalls") stalls = value;
		else if (key == "seed") seed = value;
		else if (key == "max-idle") max_idle = value;
		else if (key == "drain") drain = value;
		else if (key == "progress") progress = value;
		else fail(2, "unknown option ", argv[index]);
	}
	const size_t payload_bytes = (DUT_I_WIDTH + 7) / 8;
	if (in_bytes < 1 || in_bytes > MAX_BYTES || out_bytes < 1 || out_bytes > MAX_BYTES)
		fail(2, "item sizes must be 1 to 64 bytes");
	if (gaps > 65535 || stalls > 65535 || in_last_bit >= DUT_I_WIDTH ||
	    (in_lanes && (in_lanes * in_bytes * 8 > DUT_I_WIDTH || in_count_bit >= DUT_I_WIDTH)) ||
	    (!in_lanes && in_bytes * 8 > MAX_PAYLOAD * 8) ||
	    (out_lanes && (lane_width == 0 || lane_width > 56 || lane_valid_bit >= lane_width)) ||
	    out_last_bit >= MAX_PAYLOAD * 8)
		fail(2, "option out of range");

	Input input{std::strcmp(in_path, "-") == 0 ? stdin : std::fopen(in_path, "rb")};
	if (!input.file)
		fail(2, "cannot open input file ", in_path);
	FILE *out_file = std::strcmp(out_path, "-") == 0 ? stdout : std::fopen(out_path, "wb");
	if (!out_file)
		fail(2, "cannot open output file ", out_path);
	FILE *info = out_file == stdout ? stderr : stdout;  // progress and statistics
	std::vector<uint8_t> out_buffer;
	out_buffer.reserve(1 << 17);
	auto flush = [&]() {
		if (!out_buffer.empty() &&
		    std::fwrite(out_buffer.data(), 1, out_buffer.size(), out_file) != out_buffer.size())
			fail(2, "cannot write output file ", out_path);
		out_buffer.clear();
		if (std::fflush(out_file) != 0)
			fail(2, "cannot write output file ", out_path);
	};

	// The next beat: up to `per_beat` items (one without lanes); the final one if the input ends
	// after it. Returns false at the end of the input.
	const size_t per_beat = in_lanes ? in_lanes : 1;
	uint8_t beat[MAX_PAYLOAD + 8];
	size_t beat_items = 0;
	auto next_beat = [&]() -> bool {
		size_t have = input.want(per_beat * in_bytes, flush);
		if (have < in_bytes) {
			if (have)
				fail(2, "input file size is not a multiple of the item size");
			return false;
		}
		size_t items = have / in_bytes < per_beat ? have / in_bytes : per_beat;
		std::memset(beat, 0, payload_bytes + 8);
		std::memcpy(beat, input.buffer.data() + input.start, items * in_bytes);
		input.start += items * in_bytes;
		if (in_lanes)
			or_bits(beat, in_count_bit, items);
		if (auto_last && input.want(1, flush) == 0)
			or_bits(beat, in_last_bit, 1);
		if (DUT_I_WIDTH % 8)
			beat[DUT_I_WIDTH / 8] &= (1u << (DUT_I_WIDTH % 8)) - 1;
		std::memset(beat + payload_bytes, 0, 8);
		beat_items = items;
		return true;
	};
	auto emit = [&](const uint8_t *bytes) {
		out_buffer.insert(out_buffer.end(), bytes, bytes + out_bytes);
	};

	static Dut dut;  // static: a large model does not fit on the stack
	Rng rng(seed);
	const auto started = std::chrono::steady_clock::now();
	const std::clock_t cpu_started = std::clock();
	dut.reset();

	bool in_valid = false, in_done = false;
	uint64_t cycle = 0, first_in = 0, last_out = 0, idle = 0, items_in = 0, beats_in = 0;
	uint64_t n_outputs = 0, lasts_seen = 0, messages = 0, draining = 0;
	bool started_in = false, finished = false;
	uint8_t out_payload[MAX_PAYLOAD + 8] = {};
	if (!next_beat()) {
		in_done = true;
		finished = true;
	}
	bool have_beat = !in_done;
	while (!finished || draining <= drain) {
		// Drive the inputs for this cycle. `valid` and the payload hold until the transfer.
		if (!in_valid && have_beat) {
			in_valid = gaps == 0 || rng.next16() >= gaps;
			if (in_valid)
				dut.load_input(beat);
		}
		bool out_ready = stalls == 0 || rng.next16() >= stalls;
		dut.settle(in_valid, out_ready);

		// Sample the handshakes before the rising edge.
		bool in_transfer = in_valid && dut.in_ready();
		bool out_transfer = out_ready && dut.out_valid();
		bool in_transfer_last = false;
		if (in_transfer) {
			if (!started_in) {
				started_in = true;
				first_in = cycle;
			}
			in_transfer_last = get_bits(beat, in_last_bit, 1);
			uint64_t before = items_in;
			items_in += beat_items;
			beats_in++;
			in_valid = false;
			if (progress && items_in / progress != before / progress) {
				std::fprintf(info, "progress %llu\n", (unsigned long long)items_in);
				std::fflush(info);
			}
		}
		if (out_transfer) {
			dut.store_output(out_payload);
			bool last = get_bits(out_payload, out_last_bit, 1);
			if (out_lanes) {
				int final_lane = -1;
				for (size_t lane = 0; lane < out_lanes; lane++)
					if (get_bits(out_payload, lane * lane_width + lane_valid_bit, 1))
						final_lane = (int)lane;
				for (int lane = 0; lane <= final_lane; lane++) {
					uint64_t item = get_bits(out_payload, lane * lane_width, lane_width);
					if (!((item >> lane_valid_bit) & 1))
						continue;
					item &= ~(uint64_t(1) << lane_valid_bit);
					if (last && lane == final_lane)
						item |= uint64_t(1) << lane_valid_bit;
					uint8_t bytes[8];
					std::memcpy(bytes, &item, 8);  // little-endian hosts only
					emit(bytes);
					n_outputs++;
				}
			} else {
				emit(out_payload);
				n_outputs++;
			}
			if (out_buffer.size() >= (1 << 16))
				flush();
			if (!finished && last) {
				lasts_seen++;
				last_out = cycle;
			}
		}
		idle = (in_transfer || out_transfer) ? 0 : idle + 1;

		dut.edge();
		cycle++;

		// The next beat is fetched after the cycle, so a read that blocks never holds up the
		// evaluation of a transfer already made.
		if (in_transfer) {
			messages += in_transfer_last;
			have_beat = next_beat();
			in_done = !have_beat;
		}
		if (!finished && in_done && !in_valid && lasts_seen >= messages)
			finished = true;
		if (finished) {
			draining++;
		} else if (idle > max_idle) {
			flush();
			if (out_file != stdout)
				std::fclose(out_file);
			std::fprintf(stderr, "stream driver: no transfer for %llu cycles after %llu "
			             "inputs%s and %llu outputs\n", (unsigned long long)max_idle,
			             (unsigned long long)items_in, in_done ? " (all)" : "",
			             (unsigned long long)n_outputs);
			return 3;
		}
	}
	flush();
	if (out_file != stdout && std::fclose(out_file) != 0)
		fail(2, "cannot write output file ", out_path);

	const auto elapsed = std::chrono::steady_clock::now() - started;
	const double cpu_ns = double(std::clock() - cpu_started) * 1e9 / CLOCKS_PER_SEC;
	std::fprintf(info, "cycles=%llu total_cycles=%llu inputs=%llu beats=%llu outputs=%llu "
	             "messages=%llu cpu_ns=%llu elapsed_ns=%llu\n",
	            (unsigned long long)(started_in ? last_out - first_in + 1 : 0),
	            (unsigned long long)cycle, (unsigned long long)items_in,
	            (unsigned long long)beats_in, (unsigned long long)n_outputs,
	            (unsigned long long)messages, (unsigned long long)cpu_ns,
	            (unsigned long long)
	                std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
	return 0;
}
