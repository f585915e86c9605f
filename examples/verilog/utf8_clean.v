// Example for Verilog users: utf8-gateware's exported decoder and encoder back to back.
//
// utf8_clean takes bytes and gives back well-formed UTF-8: every ill-formed sequence becomes
// U+FFFD (EF BF BD), one per maximal subpart, exactly as CPython's
// bytes.decode("utf-8", "replace").encode("utf-8"); it counts the ill-formed sequences.
//
// Generate the two cores next to this file (utf8-gateware is `pip install utf8-gateware`):
//
//   $ utf8-gateware export decoder --errors replace -o utf8_decoder.v
//   $ utf8-gateware export encoder --errors replace -o utf8_encoder.v
//   $ verilator --lint-only -Wall utf8_clean.v utf8_decoder.v utf8_encoder.v
//
// Ports: AXI4-Stream in (a byte per beat) and out (a byte per beat), aclk, aresetn (active low,
// synchronous), error_count (ill-formed sequences since reset, saturating). Throughput: one
// byte per cycle in and out; the decoder's m_axis feeds the encoder's s_axis directly (both
// cores keep the AXI4-Stream rules: tvalid never depends on tready, so the connection forms no
// combinational loop). Latency: the decoder's plus the encoder's (see the exported headers).

`default_nettype none

module utf8_clean (
    input  wire        aclk,
    input  wire        aresetn,
    input  wire [7:0]  s_axis_tdata,
    input  wire        s_axis_tvalid,
    output wire        s_axis_tready,
    input  wire        s_axis_tlast,
    output wire [7:0]  m_axis_tdata,
    output wire        m_axis_tvalid,
    input  wire        m_axis_tready,
    output wire        m_axis_tlast,
    output reg  [31:0] error_count
);
    // Code points between the cores: tdata is the code point zero-extended to 32 bits, tuser
    // the error kind (0: a well-formed character; anything else: this U+FFFD replaces an
    // ill-formed sequence; see the exported decoder's header for the kinds).
    wire [31:0] cp_tdata;
    wire        cp_tvalid;
    wire        cp_tready;
    wire        cp_tlast;
    wire [2:0]  cp_tuser;

    utf8_decoder decoder (
        .aclk(aclk), .aresetn(aresetn),
        .s_axis_tdata(s_axis_tdata), .s_axis_tvalid(s_axis_tvalid),
        .s_axis_tready(s_axis_tready), .s_axis_tlast(s_axis_tlast),
        .m_axis_tdata(cp_tdata), .m_axis_tvalid(cp_tvalid), .m_axis_tready(cp_tready),
        .m_axis_tlast(cp_tlast), .m_axis_tuser(cp_tuser)
    );

    // With errors=replace the decoder only gives scalar values, so the encoder never reports an
    // error of its own: its tuser is left unconnected.
    /* verilator lint_off PINCONNECTEMPTY */
    utf8_encoder encoder (
        .aclk(aclk), .aresetn(aresetn),
        .s_axis_tdata(cp_tdata), .s_axis_tvalid(cp_tvalid),
        .s_axis_tready(cp_tready), .s_axis_tlast(cp_tlast),
        .m_axis_tdata(m_axis_tdata), .m_axis_tvalid(m_axis_tvalid),
        .m_axis_tready(m_axis_tready), .m_axis_tlast(m_axis_tlast),
        .m_axis_tuser()
    );
    /* verilator lint_on PINCONNECTEMPTY */

    always @(posedge aclk) begin
        if (!aresetn)
            error_count <= 32'd0;
        else if (cp_tvalid && cp_tready && cp_tuser != 3'd0 && error_count != 32'hFFFFFFFF)
            error_count <= error_count + 32'd1;
    end
endmodule

`default_nettype wire
