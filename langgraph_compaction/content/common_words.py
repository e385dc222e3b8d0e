"""Ordinary English words: what a capitalized or all-caps word must not be to name something.

A word capitalized in the middle of a sentence is a name (``Caroline``, ``Denver``) unless it
is an ordinary word in a title or a heading (``Total Price``, ``Travel Insurance``); a word in
capitals is a code (``MCO``, ``AQLBTL``) unless it is an ordinary word shouted or a log's label
(``ERROR``, ``OBSERVATION``, ``NOTE``). ``content.identifiers`` tells them apart by these lists:
about two thousand frequent English words (function words, the everyday vocabulary of chat, of
travel and shopping, of software and its logs), the days and months, and the acronyms every
reader knows, which a summary never needs verbatim (``API``, ``JSON``, ``UTC``).
"""

from __future__ import annotations

__all__ = ["COMMON_ACRONYMS", "ORDINARY_WORDS"]

_WORDS = """
    a able about above absolutely accept accepted access according account across act action
    actions active activity actually add added adding addition additional address adult
    advance advice affect after afternoon again against age agency agent ago agree agreed ahead
    aid aim air airline airport alarm album alert alive all allow allowed almost alone along
    already alright also alternative although always am amazing amount an analysis and angry
    animal annual another answer any anybody anyone anything anyway anywhere apart app apparently
    appear apply appreciate approach appropriate approve april are area argument arm around
    arrival arrive arrived art article artist as ask asked asking assist assistance assistant
    assume at attach attempt attend attention attribute audience august author auto automatic
    available average avoid awake award aware away awesome awful baby back background bad badly
    bag baggage bags balance ball bank bar base based basic basically be beach beautiful because
    become bed been before began begin beginning behind being believe below best better between
    beyond big bill birthday bit black blessed block blog blue board boat body book booked
    booking books boolean born both bottom box boy brand brave break breakfast bring brother
    brought brown budget bug build building built business busy but buy by cabin cache calculate
    call called calling calm came camera camp camping can cancel cancellation cancelled cannot
    capital car card care career careful case cash cat catch category cause celebrate center
    certain certainly certificate chair challenge chance change changed changes chapter charge
    chat cheap check checked checking cheers child children choice choose chose chosen church
    city class clean clear clearly click client close closed club code coffee cold collect
    college color colors column come comes comfortable coming command comment common community
    company compare complete completed completely computer concert condition confirm confirmed
    confirmation connect connection consider contact contain content context continue control
    cook cool copy core correct correctly cost could count country couple course court cover
    crazy create created creative credit cross cup current currently customer cut cute dad daily
    damage dance dark data database date daughter day days dead deal dear death debug december
    decide decided decision deep default define definitely degree delay delete deleted deliver
    delivery department departure depend describe description design desk destination detail
    details develop development device did didn die difference different difficult dinner direct
    direction directly directory discount discuss disk display do doc doctor document does dog
    doing dollar dollars domain don done door double down download dr draw dream dress drink drive
    driver drop due during each early earn easily east easy eat economy edit education effect
    either else email empty enable end energy engine enjoy enough ensure enter entire entry
    environment error errors especially even evening event events ever every everybody everyone
    everything exactly example excellent except exception excited exciting exist existing exit
    expect expected expensive experience explain express extra eye face fact fail failed failure
    fair fall false family fan fantastic far fast father favorite feature february fee feedback
    feel feeling feelings felt few field file files fill final finally financial find fine finish
    finished fire first fit fix fixed flag flight flights floor fly focus folder follow following
    food for force forget form format forward found free fresh friday friend friends from front
    full fun function funny future game garden gate general get gets getting gift girl give given
    glad global go goal god goes going gone good got great green group grow guess guest guide guy
    guys ha hair half hand handle happen happened happy hard has hat have having he head health
    hear heard heart hello help helpful her here hey hi high him his history hit hobby hold
    holiday home hope hopefully hospital host hot hotel hour hours house how however huge human
    husband i idea if image important in include included including income increase indeed info
    information input inside instance instead insurance interest interested interesting internal
    into invalid is issue issues it item items its january job join journey july jump june just
    keep key kid kids kind kinda know knowledge label lake land language large last late later
    latest learn learned least leave left legal less let letter level library life light like
    likely limit line link list listen little live living load local lock log login long look
    looking looks lost lot lots love lovely low lucky lunch made mail main major make making man
    manage manager many map march mark market match matter may maybe me mean means meant meet
    meeting member memory mention menu message method middle might mind minute minutes miss
    missing mode model modify mom moment monday money month months mood more morning most mother
    move movie mr mrs ms much music must my name need needed needs never new news next nice night
    no nobody none normal north not note nothing notice november now null number object october
    of off offer office often oh ok okay old on once one online only open option options or order
    other others our out output outside over own owner page paid pain paint painting paper parent
    parents park part party pass passed passenger passengers password past patch path pay payment
    people per perfect perhaps period person personal pet phone photo pick picture piece place
    plan plane play please plus point policy pool positive possible post power practice prefer
    premium prepare present pretty previous price print private probably problem process product
    profile program project proud provide public pull purchase purpose push put question quick
    quickly quite race rain random range rate rather reach read reading ready real really reason
    receive recent recently record red refund region regular related release remember remove
    repeat reply report request required reservation reset response rest result results return
    review right road room root round route rule run running safe said sale same saturday save
    saw say school screen search season seat second section see seem seen select self sell send
    sense sent september server service session set setting settings share she short should show
    side sign simple since single sir site size skip small so some someone something sometimes
    son song soon sorry sort sound source south space special spend sport staff stage standard
    star start started state status stay step still stop store story street string strong
    student study stuff style success successful such suggest summary summer sun sunday super
    support sure system table take talk task team tell test text than thank thanks that the their
    them then there these they thing things think this those though thought through thursday
    ticket time tip title to today together token told tomorrow tonight too tool top total totally
    touch towards town track train travel trip true trust try tuesday turn type under understand
    unit until up update upgrade upon us use used user users using usual usually valid value
    values variable version very video view visit wait want wanted warning was watch water way we
    wednesday week weekend welcome well went were west what when where whether which while white
    who whole why wife will win window winter wish with within without woman wonderful word words
    work worked working world worry would wow write wrong yeah year years yes yesterday yet you
    young your yourself
    according accomplish achieve achievement across activities adopt adoption adventure afraid
    amazing anniversary anxious appreciated art artwork attitude awareness beauty believe belong
    bike blessing book books boyfriend brain bravery breath brilliant buddy calm canvas caring
    celebration chill choir classes coach colleague comfort concert confident congratulations
    connected counseling counselor courage cousin creativity culture curious dancing dedication
    delicious determination dinner discovery dog dogs drawing dreams drums emotional emotions
    empathy encourage encouraging enthusiasm excellent exercise explore fabulous faith fitness
    forest freedom friendship gallery gardening generous gentle goals goodness gorgeous grateful
    gratitude growth guitar gym happiness harmony healing healthy heartwarming hiking honest
    honestly hug identity imagine impressive incredible inspiration inspire inspired inspiring
    joy kindness laugh lessons lol meditation memories mental mentor mindfulness motivation
    mountain mountains museum nature neighborhood nervous novel ocean outdoors painting
    paintings passion peace peaceful piano poetry positivity pottery powerful pride progress
    proud recipe relax relationship relaxing resilience rewarding sculpture self-care sharing
    sister sisters sky smile sounds spiritual strength stress sunset support supportive sweet
    swimming talent teacher therapy thoughtful thrilled together tough tradition transgender
    trans trail trails unique vacation violin volunteer volunteering walk walking wedding wisdom
    yoga yummy
    abstract argument array assert async await boolean branch buffer bytes call callback class
    client clone commit compile compiler component config configuration console constant
    constructor container debug decorator dependency deploy deprecated dict dictionary diff
    element enum exception expression failed field filter fixture float framework frontend
    function generic handler hash header import index instance integer interface iterator
    keyword kwargs lambda layer length lint list literal loop method module namespace node none
    observation optional override package parameter parse parser passed patch pipeline plugin
    pointer property query queue raise reference regex render repository request response return
    runtime schema scope script self setup signature slot slots snippet socket stack statement
    static stderr stdout struct subclass sum syntax task template terminal thread timeout trace
    traceback tuple typed undefined union unittest variable warning workspace wrapper yield
    important critical fatal info notice todo fixme hint tip caution danger pass fail skipped
    xfail ok done complete pending running stopped succeeded unknown true false yes no none nil
    na tbd eta fyi asap btw
    one two three four five six seven eight nine ten eleven twelve twenty thirty hundred
    thousand million billion half quarter dozen first second third fourth fifth last next
    ability absence academy accident account accurate acid activist actor actress adventure
    aggressive agreement alcohol allowance ambition analyst anchor ancient angle announcement
    anxiety apartment appetite application appointment approximately architecture archive army
    arrangement arrow assignment assumption athlete atmosphere attack attempt auction authority
    autumn average award baker balcony band barrier baseball basket basketball bath battle bear
    beat bedroom beef beer bell belt bench benefit berry bible bicycle bird birth bishop bitter
    blade blanket blind blood bloom blossom boss bottle bow bowl brand bread breeze brick bride
    bridge brief broad bubble bucket bull burden burger butter button bye cake calculation
    campaign campus candle candy capacity captain carbon carpet castle cattle cave ceiling cell
    century ceremony chain chairman champion channel character charity chart cheese chef chemical
    chess chest chicken chief chip chocolate circle circuit citizen civil claim clay climate clock
    cloud coal coast coat cocktail code collection column combat comedy comfort commission
    committee comparison competition complaint complex concept concern conclusion conference
    conflict congrats consequence consideration constitution construction consumer contest
    contract contribution conversation corner corporation costume cottage cotton council county
    courage cousin crash cream crew crime crisis criteria crop crowd crown cruise crystal cuisine
    curve cycle dairy dancer danger dash deadline debate decade deck defense definition demand
    democracy desert dessert detective diamond diet dimension dinosaur disaster disease dish
    distance district doll dollar domestic drama drawer drum duck dust duty eagle earth edge
    editor effort egg election electric electricity elephant elite emergency emperor empire
    employee employer engineer enterprise entertainment equipment era essay estate evidence
    evolution exam exhibition expansion expert explosion exposure fabric factory faculty fame
    farm farmer fashion fence festival fiction fighter figure finance finger firework fish
    fishing flavor fleet flood flower fog folk football forecast foreign forest fortune
    foundation fountain fox fragment frame fruit fuel fund funeral furniture galaxy gallery gap
    garage gas gear gene generation genius ghost giant glass glory glove gold golf government
    governor grade grain grand grandfather grandmother grass grave gravity grocery ground
    guarantee guard guitar gun habit hall hammer harbor harvest hero highway hill hint hole honey
    honor horizon horror horse hunter hunting ice icon ideal illness impact implementation
    industry infant inflation initialization injury ink innocent insect institute instruction
    instrument integration intelligence international interview invention investment invitation
    iron island jacket jail jazz jewelry joke judge juice jungle jury justice kingdom kitchen
    knife knight lab ladder lady lamp landscape laptop lawyer leader leaf league lean leather
    lecture leg legend lemon lens lesson liberty license lid lily limb lion liquid literature
    loan lobby lord loss luck luggage machine magazine magic magnet maid mall mammal manner
    mansion margin marine marriage mask mass master meal meat medal media medicine melody metal
    meter midnight military milk mill mineral minister mirror mission mobile monkey monster
    monument moon motor mount mouse mouth mud muscle mystery myth nail narrative nation navy neck
    needle neighbor nest net network noise noon nose novel nurse nut oak occasion offensive
    officer oil olive onion opera opinion orange orchestra organ origin outfit oven oxygen pace
    pack pain palace palm panel parade parking partner pasta patience pattern peak pear pen
    pencil pension pepper performance perspective phase philosophy physics pie pig pile pillow
    pilot pine pink pipe pirate pizza planet plant plastic plate platform player pleasure pocket
    poem poet poison pole police politics pollution pond pop population port portrait pot potato
    poverty powder prayer precious president press priest prince princess principle prison prize
    producer profession professor profit promise proof property proposal protest province pub
    pump pumpkin punch puppy puzzle quality quantity queen quest quiz rabbit radio rail rainbow
    ranch rank ray recipe regulation reign relief religion rent replacement republic reputation
    rescue research reserve resident resolution resort resource restaurant revolution reward
    rhythm rice ride ring riot ripple rise risk ritual river robot rock rocket role roof rope
    rose rubber rug ruin ruler rumor sailor salad salary salt sample sand sandwich satellite
    sauce scale scandal scar scene scholar science scientist score scout sculpture sea secret
    secretary sector security seed segment senate senator sensation sentence sequence series
    servant shadow shame shape shark sheep shelf shell shelter shield shift ship shirt shock
    shoe shop shore shoulder shower silence silk silver singer sink skill skin skirt slave sleep
    slice slope smoke snake snow soap soccer society sock soil soldier solution soul soup spark
    speaker species speech speed spell spider spirit sponsor spoon spot spring spy square squad
    stadium stake stamp statue steak steam steel stem stick stock stomach stone storm strategy
    straw stream stretch strike structure studio substance suburb sugar suit suite surface
    surgeon surgery surprise survey suspect sword symbol symptom tail tale tank tape target tax
    tea teaching tear technique technology teen teenager telephone telescope temple tennis tent
    territory terror theater theme theory thief thread threat throat throne thumb thunder
    tide tiger tile timber tin tissue toe tomato tone tongue tooth tournament tower toy trade
    tragedy trait treasure treaty tree trend trial tribe trick troop trophy truck trunk tube
    tunnel turkey twin uncle uniform union unity universal universe university valley van vault
    vegetable vehicle venue vessel veteran victim victory village vine virus vision vitamin
    voice volume vote voyage wage wagon wall war warrior wave wealth weapon weather web weight
    whale wheat wheel whisper whispering wild wilderness wind wine wing winner wire witch witness
    wolf wolves wood wool worker workshop worth wound yard youth zone
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday jan feb mar apr jun jul aug sep
    sept oct nov dec mon tue tues wed thu thur thurs fri sat sun
    english american british chinese japanese korean french german spanish italian russian
    indian canadian mexican african european asian latin arabic hindi portuguese dutch greek
    irish scottish australian
"""

ORDINARY_WORDS: frozenset[str] = frozenset(_WORDS.split())
"""Lowercase; a word of a title, a heading or a shout, never a name or a code on its own."""

_ACRONYMS = """
    API APIS CLI CPU GPU RAM ROM SSD HDD USB URL URI URN HTTP HTTPS HTML CSS XML JSON YAML TOML CSV
    TSV PDF PNG JPG JPEG GIF SVG SQL DNS TCP UDP SSH SSL TLS FTP SMTP IMAP REST RPC GRPC UTF ASCII
    EOF EOL IDE SDK JWT UUID GUID ORM CRUD GUI UX UI AI ML LLM NLP OS VM CI CD PR PRS MR TODO FIXME
    XXX FAQ FYI ASAP ETA TBD BTW LOL OMG DIY TV PC IT HR PM AM UTC GMT EST EDT CST CDT MST MDT PST
    PDT CET CEST BST IST JST KST MSK USD EUR GBP JPY CNY RUB INR ID IDS OK NB PS RSVP VIP ATM GET
    PUT POST PATCH DELETE HEAD OPTIONS NULL NAN INF TRUE FALSE NONE AND OR NOT XOR
"""

COMMON_ACRONYMS: frozenset[str] = frozenset(_ACRONYMS.split())
"""Acronyms in capitals that every reader knows: no summary needs them kept verbatim."""
