# Tokens (issue 6): the benchmark. The library and CLI need no fragment.
.PHONY: bench-token
bench-token: $(B)/bench/token
	$(B)/bench/token

$(B)/bench/token: $(B)/obj/bench/token.o $(B)/libkeep.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(B)/libkeep.a $(LDLIBS)
