"""International and national standards of the bundled corpus (abridged summaries written by the zan team;
the designations, titles and section layouts follow the real documents)."""

from __future__ import annotations

OSHA_1910_146_XML = """<?xml version="1.0" encoding="UTF-8"?>
<DIV8 N="1910.146" TYPE="SECTION" hierarchy='{"title":"29","part":"1910","subpart":"J","section":"1910.146"}'>
<HEAD>§ 1910.146   Permit-required confined spaces.</HEAD>
<P>(a) <I>Scope and application.</I> This section contains requirements for practices and procedures to protect employees in general industry from the hazards of entry into permit-required confined spaces.</P>
<P>(b) <I>Definitions.</I> <I>Acceptable entry conditions</I> means the conditions that must exist in a permit space to allow entry and to ensure that employees involved with a permit-required confined space entry can safely enter into and work within the space.</P>
<P><I>Confined space</I> means a space that is large enough for an employee to enter, has limited means of entry or exit, and is not designed for continuous employee occupancy.</P>
<P>(c) <I>General requirements.</I> (1) The employer shall evaluate the workplace to determine if any spaces are permit-required confined spaces.</P>
<P>(2) If the workplace contains permit spaces, the employer shall inform exposed employees by posting danger signs or by any other equally effective means.</P>
<P>(3) If the employer decides that its employees will not enter permit spaces, the employer shall take effective measures to prevent its employees from entering the permit spaces.</P>
<P>(4) If the employer decides that its employees will enter permit spaces, the employer shall develop and implement a written permit space program.</P>
<P>(5) An employer may use the alternate procedures specified in paragraph (c)(5)(ii) of this section for entering a permit space under the conditions set forth in paragraph (c)(5)(i) of this section.</P>
<P>(i) An employer whose employees enter a permit space need not comply with paragraphs (d) through (f) and (h) through (k) of this section, provided that:</P>
<P>(A) The employer can demonstrate that the only hazard posed by the permit space is an actual or potential hazardous atmosphere;</P>
<P>(B) The employer can demonstrate that continuous forced air ventilation alone is sufficient to maintain that permit space safe for entry;</P>
<P>(ii) The following requirements apply to entry into permit spaces that meet the conditions set forth in paragraph (c)(5)(i) of this section.</P>
<P>(d) <I>Permit-required confined space program.</I> Under the permit-required confined space program, the employer shall implement the measures necessary to prevent unauthorized entry and identify and evaluate the hazards of permit spaces before employees enter them.</P>
<P>(e) <I>Permit system.</I> (1) Before entry is authorized, the employer shall document the completion of measures required by paragraph (d)(3) of this section by preparing an entry permit.</P>
<P>(f) <I>Entry permit.</I> The entry permit that documents compliance with this section and authorizes entry to a permit space shall identify the permit space, the purpose of the entry, the date and duration, and the authorized entrants.</P>
<P>(g) <I>Training.</I> The employer shall provide training so that all employees whose work is regulated by this section acquire the understanding, knowledge, and skills necessary for the safe performance of the duties assigned.</P>
<P>(h) <I>Duties of authorized entrants.</I> The employer shall ensure that all authorized entrants:</P>
<P>(1) Know the hazards that may be faced during entry, including information on the mode, signs or symptoms, and consequences of the exposure;</P>
<P>(2) Properly use equipment as required by paragraph (d)(4) of this section;</P>
<P>(i) <I>Duties of attendants.</I> The employer shall ensure that each attendant:</P>
<P>(1) Knows the hazards that may be faced during entry;</P>
<P>(2) Remains outside the permit space during entry operations until relieved by another attendant.</P>
<P>(k) <I>Rescue and emergency services.</I> (1) An employer who designates rescue and emergency services shall evaluate a prospective rescuer's ability to respond to a rescue summons in a timely manner.</P>
</DIV8>
"""

API_RP_75_TXT = """API Recommended Practice 75
Safety and Environmental Management System for Offshore Operations and Assets
Fourth Edition

1 Scope
This recommended practice provides guidance for developing a safety and environmental management system (SEMS) for operations and assets on the outer continental shelf.
The guidance applies to drilling, production, well servicing and pipeline operations, and to the contractors that perform them.

2 Normative References
No normative references are required for the application of this recommended practice.

3 Safety and Environmental Information
3.1 General
Safety and environmental information shall be maintained for each facility, including process design, mechanical design and hazard information.
3.2 Process Design Information
Process design information includes a process flow diagram and acceptable upper and lower limits for temperatures, pressures, flows and compositions.

4 Hazards Analysis
4.1 General
A hazards analysis shall be performed for each facility to identify, evaluate and reduce the likelihood or minimize the consequences of uncontrolled releases.
4.2 Job Safety Analysis
A job safety analysis shall be performed for tasks that could result in injury, including confined space entry and hot work.

5 Management of Change
Procedures shall be developed to identify and control hazards associated with change and to maintain the accuracy of safety and environmental information.
"""

ISO_45001_TXT = """ISO 45001:2018
Occupational health and safety management systems — Requirements with guidance for use

1 Scope
This document specifies requirements for an occupational health and safety (OH&S) management system, and gives guidance for its use, to enable organizations to provide safe and healthy workplaces by preventing work-related injury and ill health.

4 Context of the organization
4.1 Understanding the organization and its context
The organization shall determine external and internal issues that are relevant to its purpose and that affect its ability to achieve the intended outcomes of its OH&S management system.
4.2 Understanding the needs and expectations of workers and other interested parties
The organization shall determine the other interested parties that are relevant to the OH&S management system and their relevant needs and expectations.

5 Leadership and worker participation
5.1 Leadership and commitment
Top management shall demonstrate leadership and commitment with respect to the OH&S management system by taking overall responsibility and accountability for the prevention of work-related injury and ill health.
5.4 Consultation and participation of workers
The organization shall establish processes for consultation and participation of workers at all applicable levels and functions.

6 Planning
6.1.2 Hazard identification and assessment of risks and opportunities
The organization shall establish a process for hazard identification that is ongoing and proactive, taking into account routine and non-routine activities and emergency situations.
"""

NFPA_652_HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>NFPA 652 Standard on the Fundamentals of Combustible Dust</title></head>
<body>
<h1>NFPA 652</h1>
<p class="subtitle">Standard on the Fundamentals of Combustible Dust, 2024 Edition</p>
<h2>Chapter 1 Administration</h2>
<h3>1.1 Scope</h3>
<p>This standard shall provide the basic principles of and requirements for identifying and managing the fire, flash fire, and explosion hazards of combustible dusts and particulate solids.</p>
<h3>1.2 Purpose</h3>
<p>The purpose of this standard is to provide the minimum general requirements necessary to manage the fire, flash fire, and explosion hazards posed by combustible dusts.</p>
<h2>Chapter 5 Hazard Identification</h2>
<h3>5.1 Responsibility</h3>
<p>The owner or operator of a facility with potentially combustible dusts shall be responsible for determining whether the materials are combustible or explosible.</p>
<h2>Chapter 7 Dust Hazard Analysis (DHA)</h2>
<h3>7.1 General Requirements</h3>
<p>The owner or operator shall complete a dust hazard analysis for existing processes and facility compartments that handle combustible particulate solids.</p>
<ul><li>The DHA shall be reviewed and updated at least every 5 years.</li></ul>
<h2>Chapter 8 Management Systems</h2>
<h3>8.1 General</h3>
<p>The owner or operator shall implement management systems including operating procedures, inspection, testing and maintenance, training and hazard awareness, and management of change.</p>
</body></html>
"""

TR_TS_004_HTML = """<!DOCTYPE html>
<html lang="ru"><head><meta charset="utf-8"><title>ТР ТС 004/2011 О безопасности низковольтного оборудования</title></head>
<body>
<h1>Технический регламент Таможенного союза ТР ТС 004/2011</h1>
<p class="subtitle">О безопасности низковольтного оборудования</p>
<p>Утвержден Решением Комиссии Таможенного союза от 16 августа 2011 года № 768.</p>
<h2>Статья 1. Область применения</h2>
<p>1. Настоящий технический регламент Таможенного союза распространяется на низковольтное оборудование, выпускаемое в обращение на единой таможенной территории Таможенного союза.</p>
<p>2. Для целей настоящего технического регламента к низковольтному оборудованию относится электрическое оборудование, предназначенное для использования при номинальном напряжении от 50 до 1000 В переменного тока и от 75 до 1500 В постоянного тока.</p>
<h2>Статья 2. Определения</h2>
<p>Выпуск в обращение – поставка или ввоз низковольтного оборудования с целью распространения на территории Таможенного союза в ходе коммерческой деятельности.</p>
<h2>Статья 4. Требования безопасности</h2>
<p>1. Низковольтное оборудование должно быть разработано и изготовлено таким образом, чтобы при применении его по назначению обеспечивался необходимый уровень защиты от прямого или косвенного воздействия электрического тока.</p>
<p>2. Должна быть обеспечена защита от опасностей нетермического характера, возникающих при работе низковольтного оборудования.</p>
<h2>Статья 7. Подтверждение соответствия</h2>
<p>Низковольтное оборудование перед выпуском в обращение подлежит подтверждению соответствия в форме сертификации или декларирования соответствия.</p>
</body></html>
"""

GOST_12_0_004_TXT = """ГОСТ 12.0.004-2015
Система стандартов безопасности труда. Организация обучения безопасности труда. Общие положения

1 Область применения
Настоящий стандарт устанавливает основные виды и формы обучения и проверки знаний по безопасности труда работников всех видов экономической деятельности.

4 Общие положения
4.1 Обучение безопасности труда является одной из основных форм профилактики производственного травматизма и профессиональной заболеваемости.
4.2 Обучение безопасности труда проводится в течение всей трудовой деятельности работника.

8 Инструктажи по охране труда
8.1 Вводный инструктаж проводится до начала трудовой деятельности со всеми вновь принимаемыми работниками.
8.2 Первичный инструктаж на рабочем месте проводится непосредственным руководителем работ.
"""

IOGP_423_LINES = [
    "IOGP Report 423",
    "HSE management - guidelines for working together in a contract environment",
    "",
    "1 Introduction",
    "This report gives guidance to clients and contractors on managing health, safety and environment in contracted",
    "activities in the oil and gas industry, from the planning phase through to close out.",
    "",
    "2 Contract modes",
    "Three modes are described. In mode 1 the contractor works under the client's HSE management system. In mode 2",
    "the contractor works under its own HSE management system with interfaces to the client. In mode 3 the contractor",
    "works under its own system with minimal client involvement.",
    "",
    "3 Pre-contract phase",
    "The client identifies the HSE risks of the work, sets HSE capability requirements and evaluates the HSE",
    "capability of candidate contractors before award.",
    "",
    "4 Execution phase",
    "Both parties verify that controls are in place, share lessons learned, report incidents and hold regular HSE",
    "meetings. Bridging documents align the two management systems where they differ.",
    "",
    "5 Close out",
    "A final evaluation of HSE performance is held and the lessons are recorded for future contracts.",
]
