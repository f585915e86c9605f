// The virtual board: a CXXRTL model of the board's gateware whose UART pins are bridged to a
// pseudo-terminal, so that a host program (pyserial) talks to it exactly as to the real board.
//
// Compiled in one translation unit after the generated design (see `build_cxxrtl` in
// sim/compiled.py), which defines CXXRTL_TOP; the design's ports are `clk`, `rst`, `rx`, `tx`,
// `led_activity`, `led_error`.
//
// Usage: virtual_board MASTER_FD DIVISOR HOST_PID [RATE SEED KINDS RESET_AT STALL]
//
//   MASTER_FD  an open file descriptor of the pty master (the parent also passes the slave, kept
//              open so that the master never reports a hang-up between two host connections)
//   DIVISOR    clock cycles per UART bit
//   HOST_PID   the process of the host (0: none). While it is runnable (Linux: 'R' in
//              /proc/PID/stat: computing, or preempted on a busy machine, maybe in the middle of
//              writing a frame) and no byte of it is waiting, simulated time stands still: the
//              simulated line sees a host infinitely faster than itself, as a real line nearly
//              does, so what it measures does not depend on the host machine's load. A host
//              that sleeps (waiting for the board) lets time run.
//   RATE       faults per byte in each direction (0: none), injected by the bridge
//   SEED       of the fault generator (a fixed seed gives the same faults on the same bytes)
//   KINDS      bit mask of the faults to draw from: 1 bit flip, 2 dropped byte, 4 inserted byte,
//              8 stall (one direction of the line pauses for up to STALL cycles), 16 board
//              reset (the gateware's reset is pulsed)
//   RESET_AT   reset the board once, after this many bytes went to it (0: never)
//   STALL      the longest stall, in clock cycles (drawn evenly from 1..STALL)
//
// The driver plays the USB-UART bridge: bytes the host writes to the pty are sent on the board's
// `rx` pin (8N1, back to back), and characters the board sends on `tx` are sampled mid-bit and
// written to the pty. Simulated time is the cycle count; it stands still while the host is
// runnable with no byte waiting (HOST_PID), and advances while the host sleeps (so the board's
// timeouts fire), when the line is idle in slices of 3000 bit times between sleeps in poll(2)
// that grow to 20 ms, so an idle board costs little CPU. The driver stops when its standard input reaches end of file (the
// parent closes it) and prints `cycles=C elapsed_ns=E framing_errors=F` and the faults injected,
// `faults=flip:N,drop:N,insert:N,stall:N,reset:N`, and the cycles of the stalls drawn in each
// direction, `stalled=to_board:N,to_host:N`, on standard output.

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

namespace {

template<class T, class = void>
struct has_prev_clk : std::false_type {};
template<class T>
struct has_prev_clk<T, std::void_t<decltype(std::declval<T &>().prev_p_clk)>> : std::true_type {};

[[noreturn]] void fail(const char *message) {
	std::fprintf(stderr, "virtual board: %s\n", message);
	std::exit(2);
}

long parse_long(const char *text) {
	char *end = nullptr;
	long value = std::strtol(text, &end, 0);
	if (end == text || *end != '\0' || value < 0)
		fail("bad argument");
	return value;
}

// The fault generator: one draw per byte and direction.
enum Fault { NONE = -1, FLIP, DROP, INSERT, STALL, RESET, N_FAULTS };
const char *const FAULT_NAMES[N_FAULTS] = {"flip", "drop", "insert", "stall", "reset"};

struct Faults {
	double rate = 0;
	unsigned kinds = 0;
	std::mt19937_64 rng;
	uint64_t counts[N_FAULTS] = {};

	Fault draw() {
		if (rate <= 0 || kinds == 0 || std::uniform_real_distribution<double>(0, 1)(rng) >= rate)
			return NONE;
		int enabled[N_FAULTS], n = 0;
		for (int kind = 0; kind < N_FAULTS; kind++)
			if (kinds & (1u << kind))
				enabled[n++] = kind;
		Fault fault = (Fault)enabled[rng() % n];
		counts[fault]++;
		return fault;
	}
	uint8_t bit() { return (uint8_t)(1u << (rng() % 8)); }
	uint8_t byte() { return (uint8_t)rng(); }
	uint64_t below(uint64_t limit) { return 1 + rng() % limit; }
};

// Whether a process is runnable (state 'R' in /proc/PID/stat); false if it cannot be told.
struct HostState {
	int fd = -1;
	explicit HostState(long pid) {
		if (pid > 0) {
			char path[64];
			std::snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
			fd = open(path, O_RDONLY);
		}
	}
	bool runnable() {
		if (fd < 0)
			return false;
		char text[512];
		ssize_t count = pread(fd, text, sizeof(text) - 1, 0);
		if (count <= 0)
			return false;
		text[count] = '\0';
		const char *end = std::strrchr(text, ')');  // "PID (COMM) STATE ..."
		return end && end[1] == ' ' && end[2] == 'R';
	}
};

}

int main(int argc, char **argv) {
	if (argc != 4 && argc != 9)
		fail("usage: virtual_board MASTER_FD DIVISOR HOST_PID [RATE SEED KINDS RESET_AT STALL]");
	int master = (int)parse_long(argv[1]);
	long divisor = parse_long(argv[2]);
	if (divisor < 4)
		fail("divisor must be at least 4");
	if (fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK) < 0)
		fail("cannot make the pty master non-blocking");
	HostState host(parse_long(argv[3]));

	Faults faults;
	uint64_t reset_at = 0;
	uint64_t stall_max = 1;
	if (argc == 9) {
		faults.rate = std::strtod(argv[4], nullptr);
		faults.rng.seed((uint64_t)parse_long(argv[5]));
		faults.kinds = (unsigned)parse_long(argv[6]);
		reset_at = (uint64_t)parse_long(argv[7]);
		stall_max = (uint64_t)parse_long(argv[8]);
		if (stall_max < 1)
			fail("STALL must be at least 1");
	}

	CXXRTL_TOP top;
	auto tick = [&]() {
		if constexpr (has_prev_clk<CXXRTL_TOP>::value) {
			// Only rising edges matter (no logic is sensitive to the falling edge), so make
			// one: the design compares `p_clk` with the value it saw at the last commit. This
			// halves the evaluations per cycle.
			top.prev_p_clk = cxxrtl::value<1>{0u};
			top.p_clk.set<bool>(true);
			top.step();
		} else {
			top.p_clk.set<bool>(false);
			top.step();
			top.p_clk.set<bool>(true);
			top.step();
		}
	};
	auto reset = [&]() {
		top.p_rst.set<bool>(true);
		for (int i = 0; i < 4; i++)
			tick();
		top.p_rst.set<bool>(false);
	};
	top.p_rx.set<bool>(true);
	reset();

	std::deque<uint8_t> to_board;
	std::vector<uint8_t> to_host;
	size_t to_host_sent = 0;

	// host -> board (drives `rx`)
	int tx_bits = 0;
	long tx_timer = 0;
	uint32_t tx_shreg = 0;
	// board -> host (samples `tx`)
	enum { IDLE, START, DATA, STOP, BREAK } rx_state = IDLE;
	long rx_timer = 0;
	int rx_bit = 0;
	uint32_t rx_value = 0;
	uint64_t framing_errors = 0;

	uint64_t cycle = 0, last_activity = 0;
	uint64_t to_board_count = 0, board_stall_until = 0, host_stall_until = 0;
	uint64_t stalled_to_board = 0, stalled_to_host = 0;  // cycles of stalls drawn, per direction
	const uint64_t busy_chunk = 2048;
	const uint64_t idle_chunk = 3000 * (uint64_t)divisor;  // 1 ms of board time at 3 Mbaud
	const uint64_t idle_after = 40 * 10 * (uint64_t)divisor;
	int idle_timeout_ms = 0;
	bool stdin_open = true;
	auto started = std::chrono::steady_clock::now();
	std::vector<uint8_t> buffer(1 << 16);

	while (stdin_open) {
		// Service the pty.
		for (;;) {
			ssize_t count = read(master, buffer.data(), buffer.size());
			if (count > 0) {
				to_board.insert(to_board.end(), buffer.begin(), buffer.begin() + count);
				continue;
			}
			break;  // EAGAIN, or EIO while no host has the slave open
		}
		while (to_host_sent < to_host.size() && cycle >= host_stall_until) {
			ssize_t count = write(master, to_host.data() + to_host_sent,
			                      to_host.size() - to_host_sent);
			if (count <= 0)
				break;  // the host is not reading: keep the bytes (like the bridge's FIFO)
			to_host_sent += count;
		}
		if (to_host_sent == to_host.size()) {
			to_host.clear();
			to_host_sent = 0;
		}

		bool idle = to_board.empty() && tx_bits == 0 && rx_state == IDLE &&
		            cycle - last_activity > idle_after;
		struct pollfd fds[2] = {{0, POLLIN, 0}, {master, POLLIN, 0}};
		if (to_board.empty() && host.runnable()) {
			// The host is busy (or waits for a CPU): time stands still until it writes or
			// sleeps (checked again every 100 us; /proc, and so this, is Linux's).
#ifdef __linux__
			struct timespec wait = {0, 100000};
			int ready = ppoll(fds, 2, &wait, nullptr);
#else
			int ready = poll(fds, 2, 1);
#endif
			if (ready > 0 && (fds[0].revents & (POLLIN | POLLHUP))) {
				char dummy[256];
				if (read(0, dummy, sizeof(dummy)) <= 0)
					stdin_open = false;
			}
			idle_timeout_ms = 0;
			continue;
		}
		if (idle) {
			if (poll(fds, 2, idle_timeout_ms) > 0 && (fds[1].revents & POLLIN)) {
				idle_timeout_ms = 0;
				continue;  // take the host's bytes before simulating on
			}
			idle_timeout_ms = idle_timeout_ms < 1 ? 1 : (idle_timeout_ms * 2 > 20 ? 20 : idle_timeout_ms * 2);
		} else {
			idle_timeout_ms = 0;
			if (poll(fds, 1, 0) < 0)
				fds[0].revents = 0;
		}
		if (fds[0].revents & (POLLIN | POLLHUP)) {
			char dummy[256];
			if (read(0, dummy, sizeof(dummy)) <= 0)
				stdin_open = false;
		}

		uint64_t chunk = idle ? idle_chunk : busy_chunk;
		for (uint64_t n = 0; n < chunk; n++) {
			if (tx_bits == 0 && !to_board.empty() && cycle >= board_stall_until) {
				uint8_t byte = to_board.front();
				to_board.pop_front();
				bool send = true;
				switch (faults.draw()) {
				case FLIP: byte ^= faults.bit(); break;
				case DROP: send = false; break;
				case INSERT: to_board.push_front(byte); byte = faults.byte(); break;
				case STALL: {
					uint64_t length = faults.below(stall_max);
					board_stall_until = cycle + length;
					stalled_to_board += length;
					break;
				}
				case RESET: reset(); break;
				default: break;
				}
				if (reset_at && ++to_board_count == reset_at)
					reset();
				if (send) {
					tx_shreg = (1u << 9) | ((uint32_t)byte << 1);
					tx_bits = 10;
					tx_timer = divisor;
				}
			}
			top.p_rx.set<bool>(tx_bits ? (tx_shreg & 1) : true);
			tick();
			cycle++;
			if (tx_bits) {
				last_activity = cycle;
				if (--tx_timer == 0) {
					tx_shreg >>= 1;
					tx_bits--;
					tx_timer = divisor;
				}
			}
			bool line = top.p_tx.get<bool>();
			switch (rx_state) {
			case IDLE:
				if (!line) {
					rx_state = START;
					rx_timer = divisor / 2;
				}
				break;
			case START:
				if (--rx_timer == 0) {
					if (line) {
						rx_state = IDLE;
					} else {
						rx_state = DATA;
						rx_bit = 0;
						rx_value = 0;
						rx_timer = divisor;
					}
				}
				break;
			case DATA:
				if (--rx_timer == 0) {
					rx_value |= (uint32_t)line << rx_bit;
					rx_timer = divisor;
					if (++rx_bit == 8)
						rx_state = STOP;
				}
				break;
			case STOP:
				if (--rx_timer == 0) {
					if (line) {
						uint8_t byte = (uint8_t)rx_value;
						switch (faults.draw()) {
						case FLIP: to_host.push_back(byte ^ faults.bit()); break;
						case DROP: break;
						case INSERT: to_host.push_back(faults.byte()); to_host.push_back(byte); break;
						case STALL: {
							to_host.push_back(byte);
							// (Stalls of the bytes to the host may overlap: count the union.)
							uint64_t until = cycle + faults.below(stall_max);
							uint64_t from = host_stall_until > cycle ? host_stall_until : cycle;
							if (until > from) {
								stalled_to_host += until - from;
								host_stall_until = until;
							}
							break;
						}
						case RESET: to_host.push_back(byte); reset(); break;
						default: to_host.push_back(byte); break;
						}
						rx_state = IDLE;
					} else {
						framing_errors++;
						rx_state = BREAK;
					}
				}
				break;
			case BREAK:
				if (line)
					rx_state = IDLE;
				break;
			}
			if (rx_state != IDLE)
				last_activity = cycle;
		}
	}
	auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(
		std::chrono::steady_clock::now() - started).count();
	std::printf("cycles=%llu elapsed_ns=%lld framing_errors=%llu\n", (unsigned long long)cycle,
	            (long long)elapsed, (unsigned long long)framing_errors);
	std::printf("faults=");
	for (int kind = 0; kind < N_FAULTS; kind++)
		std::printf("%s%s:%llu", kind ? "," : "", FAULT_NAMES[kind],
		            (unsigned long long)faults.counts[kind]);
	std::printf("\nstalled=to_board:%llu,to_host:%llu\n", (unsigned long long)stalled_to_board,
	            (unsigned long long)stalled_to_host);
	return 0;
}
