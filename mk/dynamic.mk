# Dynamic executables (issue 18): test guests built with the host's plain
# gcc (PIEs with an interpreter, loaded by glibc's ld.so in the guest).

DYN_GUESTS = $(B)/guests/dynamic/hello $(B)/guests/dynamic/dlopen \
             $(B)/guests/dynamic/libsquare.so
ALL_EXTRA += $(DYN_GUESTS)

$(B)/guests/dynamic/%: tests/guests/dynamic/%.c | deps
	@mkdir -p $(dir $@)
	gcc -O1 -Wall -Werror -o $@ $<

$(B)/guests/dynamic/lib%.so: tests/guests/dynamic/%.c | deps
	@mkdir -p $(dir $@)
	gcc -O1 -Wall -Werror -shared -fPIC -o $@ $<

# bench/images (not part of make check): the package images' start,
# import and memory figures beside Debian's own interpreter, their build
# times and sizes; then bench/images_api: print(1) through keepd's API
# from the python and the machine image.
.PHONY: bench-images
bench-images: $(B)/bin/keep $(B)/bin/keepd images
	bash bench/images.sh $(B)
	bash bench/images_api.sh $(B)
