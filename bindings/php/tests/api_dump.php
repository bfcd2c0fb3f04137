<?php
/*
 * The Tkshm API as Reflection sees it, as JSON: constants, classes (flags,
 * properties, methods) and functions with their parameter and return
 * types and default values.  `php -n api_dump.php <stub>` loads the stub
 * (tkshm.stub.php, plain PHP) and prints its API; api_test.php includes
 * this file to compare the loaded extension's API with it.
 */

declare(strict_types=1);

function tkshm_api_params(ReflectionFunctionAbstract $f): array
{
    $out = [];
    foreach ($f->getParameters() as $p) {
        $out[] = [
            'name' => $p->getName(),
            'type' => (string)$p->getType(),
            'optional' => $p->isOptional(),
            'default' => $p->isDefaultValueAvailable() ? var_export($p->getDefaultValue(), true) : null,
            'byRef' => $p->isPassedByReference(),
        ];
    }
    return [
        'params' => $out,
        'required' => $f->getNumberOfRequiredParameters(),
        'return' => (string)$f->getReturnType(),
    ];
}

function tkshm_api(): array
{
    $api = ['constants' => [], 'classes' => [], 'functions' => []];
    foreach (get_defined_constants() as $name => $value) {
        if (str_starts_with($name, 'Tkshm\\')) {
            $api['constants'][$name] = $value;
        }
    }
    ksort($api['constants']);
    foreach (['Tkshm\\Exception', 'Tkshm\\Decision', 'Tkshm\\Table', 'Tkshm\\Redis'] as $name) {
        if (!class_exists($name)) {
            $api['classes'][$name] = null;
            continue;
        }
        $c = new ReflectionClass($name);
        $cls = [
            'parent' => $c->getParentClass() ? $c->getParentClass()->getName() : null,
            'final' => $c->isFinal(),
            'readonly' => $c->isReadOnly(),
            'constructor' => $c->getConstructor() && $c->getConstructor()->getDeclaringClass()->getName() === $name,
            'properties' => [],
            'methods' => [],
        ];
        foreach ($c->getProperties() as $p) {
            if ($p->getDeclaringClass()->getName() !== $name) {
                continue;
            }
            $cls['properties'][$p->getName()] = [
                'type' => (string)$p->getType(),
                'public' => $p->isPublic(),
                'readonly' => $p->isReadOnly(),
                'static' => $p->isStatic(),
            ];
        }
        foreach ($c->getMethods() as $m) {
            if ($m->getDeclaringClass()->getName() !== $name) {
                continue;
            }
            $cls['methods'][$m->getName()] = tkshm_api_params($m) + [
                'public' => $m->isPublic(),
                'static' => $m->isStatic(),
            ];
        }
        ksort($cls['methods']);
        $api['classes'][$name] = $cls;
    }
    foreach (['Tkshm\\headers', 'Tkshm\\client_key'] as $name) {
        $api['functions'][$name] = function_exists($name) ? tkshm_api_params(new ReflectionFunction($name)) : null;
    }
    return $api;
}

if (realpath($_SERVER['SCRIPT_FILENAME']) === __FILE__) {
    if (extension_loaded('tkshm')) {
        fwrite(STDERR, "api_dump.php: run without the extension (php -n)\n");
        exit(2);
    }
    require $argv[1];
    echo json_encode(tkshm_api(), JSON_PRETTY_PRINT | JSON_THROW_ON_ERROR), "\n";
}
