# Live contexts (docs/contexts.md): the interpreter drivers the vmm hands
# to a context's guest, and the runner of a plain python execute that
# the front passes, embedded in keepd from image/stock/.

CTX_GEN = $(B)/gen/context_drivers.c
LIB_OBJS += $(B)/obj/gen/context_drivers.o

$(CTX_GEN): image/stock/keep_driver.py image/stock/keep_driver.js \
    image/stock/keep_once.py mk/text2c.py | deps
	@mkdir -p $(dir $@)
	python3 mk/text2c.py $@ keep_driver_py=image/stock/keep_driver.py \
	    keep_driver_js=image/stock/keep_driver.js \
	    keep_once_py=image/stock/keep_once.py

$(B)/obj/gen/context_drivers.o: $(CTX_GEN)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

.PHONY: bench-snap
bench-snap: $(B)/bin/keep $(B)/bin/keepd images
	bash bench/snap.sh
