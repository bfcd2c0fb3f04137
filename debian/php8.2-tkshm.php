mod bindings/php/tkshm.ini
